import type { Organization as OrganizationRow } from './generated/prisma/client';
import { microsFromDb } from './micros';
import type { Db } from './prisma-client';

/** An organization: the owner of workflows, tokens and the ledger. */
export interface Organization {
  id: string;
  slug: string;
  name: string;
  /** True once the slug namespaces a published workflow. */
  slugFrozen: boolean;
  /** Running total of the ledger, micro-USD. */
  balanceMicros: number;
  createdAt: Date;
}

function toOrganization(row: OrganizationRow): Organization {
  return { id: row.id, slug: row.slug, name: row.name, slugFrozen: row.slugFrozen, balanceMicros: microsFromDb(row.balanceMicros), createdAt: row.createdAt };
}

/** Organizations table. Slug rules (kebab-case, reserved namespaces) are checked by the caller (engine). */
export class OrganizationRepository {
  constructor(private readonly db: Db) {}

  /** Creates an organization with a zero balance; a taken slug fails with Prisma's unique violation (P2002). */
  async create(input: { slug: string; name: string }): Promise<Organization> {
    return toOrganization(await this.db.organization.create({ data: { slug: input.slug, name: input.name } }));
  }

  async findById(id: string): Promise<Organization | null> {
    const row = await this.db.organization.findUnique({ where: { id } });
    return row ? toOrganization(row) : null;
  }

  async findBySlug(slug: string): Promise<Organization | null> {
    const row = await this.db.organization.findUnique({ where: { slug } });
    return row ? toOrganization(row) : null;
  }

  /**
   * Returns the organization with this slug, creating it when missing; an existing one is returned
   * unchanged. Safe to run concurrently (one INSERT wins, the others read it).
   */
  async ensure(input: { slug: string; name: string }): Promise<{ organization: Organization; created: boolean }> {
    const inserted = await this.db.organization.createMany({ data: [{ slug: input.slug, name: input.name }], skipDuplicates: true });
    const row = await this.db.organization.findUniqueOrThrow({ where: { slug: input.slug } });
    return { organization: toOrganization(row), created: inserted.count === 1 };
  }

  /** Freezes the slug (idempotent); called when the organization's first workflow is published. */
  async freezeSlug(id: string): Promise<void> {
    await this.db.organization.updateMany({ where: { id, slugFrozen: false }, data: { slugFrozen: true } });
  }
}
