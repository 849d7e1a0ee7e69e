import type { Membership as MembershipRow } from './prisma-generated';
import { microsFromDb } from './micros';
import type { Db } from './prisma-client';

/** What a member may do in an organization. */
export type Role = 'owner' | 'admin' | 'member';

/** A user's membership of an organization. */
export interface Membership {
  orgId: string;
  userId: string;
  role: Role;
  createdAt: Date;
}

/** An organization as one of its members sees it. */
export interface MemberOrganization {
  id: string;
  slug: string;
  name: string;
  role: Role;
  /** The balance less what unfinished runs hold, micro-USD; may be negative. */
  availableMicros: number;
}

const ROLES: readonly string[] = ['owner', 'admin', 'member'] satisfies Role[];

function toMembership(row: MembershipRow): Membership {
  if (!ROLES.includes(row.role)) throw new Error(`membership of user ${row.userId} in org ${row.orgId} has unknown role "${row.role}"`);
  return { orgId: row.orgId, userId: row.userId, role: row.role as Role, createdAt: row.createdAt };
}

/** Memberships table: user × organization, one row per pair. */
export class MembershipRepository {
  constructor(private readonly db: Db) {}

  /** Adds a user to an organization; an existing membership fails with Prisma's unique violation (P2002). */
  async create(input: { orgId: string; userId: string; role: Role }): Promise<Membership> {
    return toMembership(await this.db.membership.create({ data: input }));
  }

  async find(orgId: string, userId: string): Promise<Membership | null> {
    const row = await this.db.membership.findUnique({ where: { orgId_userId: { orgId, userId } } });
    return row ? toMembership(row) : null;
  }

  /** Every membership, oldest first (for listings of all users). */
  async listAll(): Promise<Membership[]> {
    const rows = await this.db.membership.findMany({ orderBy: [{ createdAt: 'asc' }, { orgId: 'asc' }] });
    return rows.map(toMembership);
  }

  /** The organizations a user belongs to, oldest membership first. */
  async listForUser(userId: string): Promise<Membership[]> {
    const rows = await this.db.membership.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } });
    return rows.map(toMembership);
  }

  /**
   * The organizations a user belongs to with their role in each and each one's available balance
   * (its balance less what its unfinished runs hold, docs/money.md), oldest membership first; one query.
   */
  async listOrganizationsOfUser(userId: string): Promise<MemberOrganization[]> {
    const rows = await this.db.membership.findMany({
      where: { userId },
      orderBy: [{ createdAt: 'asc' }, { orgId: 'asc' }],
      select: { role: true, userId: true, orgId: true, org: { select: { id: true, slug: true, name: true, balanceMicros: true, heldMicros: true } } },
    });
    return rows.map((row) => {
      if (!ROLES.includes(row.role)) throw new Error(`membership of user ${row.userId} in org ${row.orgId} has unknown role "${row.role}"`);
      const { id, slug, name, balanceMicros, heldMicros } = row.org;
      return { id, slug, name, role: row.role as Role, availableMicros: microsFromDb(balanceMicros - heldMicros) };
    });
  }

  /** Returns the membership, creating it with `role` when missing; an existing role is left as it is. */
  async ensure(input: { orgId: string; userId: string; role: Role }): Promise<{ membership: Membership; created: boolean }> {
    const inserted = await this.db.membership.createMany({ data: [input], skipDuplicates: true });
    const row = await this.db.membership.findUniqueOrThrow({ where: { orgId_userId: { orgId: input.orgId, userId: input.userId } } });
    return { membership: toMembership(row), created: inserted.count === 1 };
  }
}
