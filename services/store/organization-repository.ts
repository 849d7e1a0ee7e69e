import { checkDisplayName } from '../engine/account-rules';
import { checkOrgSlug } from '../engine/workflow-ref';
import { AppError } from '../platform/app-error';
import type { Organization as OrganizationRow } from './prisma-generated';
import { microsFromDb } from './micros';
import type { Db } from './prisma-client';

/** An organization: the owner of workflows, tokens and the ledger. */
export interface Organization {
  id: string;
  slug: string;
  name: string;
  /** True once the slug namespaces a published workflow. */
  slugFrozen: boolean;
  /** Running total of the ledger, micro-USD (unfinished runs' charges included: `svc_org_balance`). */
  balanceMicros: number;
  /** Its own step concurrency limit (fair scheduling); null: the deployment's ORG_STEP_CONCURRENCY. */
  stepConcurrency: number | null;
  createdAt: Date;
}

function toOrganization(row: OrganizationRow, balanceMicros: bigint | string): Organization {
  return { id: row.id, slug: row.slug, name: row.name, slugFrozen: row.slugFrozen, balanceMicros: microsFromDb(balanceMicros), stepConcurrency: row.stepConcurrency, createdAt: row.createdAt };
}

/** The slug and name checked (kebab-case, not a platform namespace; a name of text): a 400 names what is wrong. */
function checked(input: { slug: string; name: string }): { slug: string; name: string } {
  const slug = checkOrgSlug(input.slug);
  if (!slug.ok) throw new AppError({ code: 'validation_failed', message: slug.message });
  const name = checkDisplayName(input.name, 'an organization name');
  if (!name.ok) throw new AppError({ code: 'validation_failed', message: name.message });
  return { slug: slug.value, name: name.value };
}

/** Organizations table. Slugs are checked against the engine's rules before anything is written. */
export class OrganizationRepository {
  constructor(private readonly db: Db) {}

  /**
   * Creates an organization with a zero balance. A slug that is not kebab-case or is reserved
   * for the platform fails with `validation_failed`, a taken one with `conflict`.
   */
  async create(input: { slug: string; name: string }): Promise<Organization> {
    const data = checked(input);
    const inserted = await this.db.organization.createMany({ data: [data], skipDuplicates: true });
    if (inserted.count === 0) throw new AppError({ code: 'conflict', message: `the organization slug "${data.slug}" is taken` });
    return (await this.withBalances([await this.db.organization.findUniqueOrThrow({ where: { slug: data.slug } })]))[0]!;
  }

  /** Every organization, oldest first. */
  async list(): Promise<Organization[]> {
    const rows = await this.db.organization.findMany({ orderBy: [{ createdAt: 'asc' }, { slug: 'asc' }] });
    return this.withBalances(rows);
  }

  async findById(id: string): Promise<Organization | null> {
    const row = await this.db.organization.findUnique({ where: { id } });
    return row ? (await this.withBalances([row]))[0]! : null;
  }

  async findBySlug(slug: string): Promise<Organization | null> {
    const row = await this.db.organization.findUnique({ where: { slug } });
    return row ? (await this.withBalances([row]))[0]! : null;
  }

  /**
   * Returns the organization with this slug, creating it when missing; an existing one is returned
   * unchanged. Safe to run concurrently (one INSERT wins, the others read it).
   */
  async ensure(input: { slug: string; name: string }): Promise<{ organization: Organization; created: boolean }> {
    const data = checked(input);
    const inserted = await this.db.organization.createMany({ data: [data], skipDuplicates: true });
    const row = await this.db.organization.findUniqueOrThrow({ where: { slug: data.slug } });
    return { organization: (await this.withBalances([row]))[0]!, created: inserted.count === 1 };
  }

  /**
   * The rows with their balances: the row's `balance_micros` does not show what unfinished runs
   * were charged yet (docs/money.md, Deferred settlement), `svc_org_balance` does.
   */
  private async withBalances(rows: OrganizationRow[]): Promise<Organization[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((row) => row.id);
    const balances = await this.db.$queryRaw<{ id: string; balance: string }[]>`SELECT id::text, svc_org_balance(id)::text AS balance FROM unnest(${ids}::uuid[]) AS id`;
    const byId = new Map(balances.map((b) => [b.id, b.balance]));
    return rows.map((row) => toOrganization(row, byId.get(row.id) ?? row.balanceMicros));
  }

  /** Organizations with a concurrency limit of their own (fair scheduling), by id. */
  async stepConcurrencyLimits(): Promise<Map<string, number>> {
    // A negative value (only SQL by hand could write one) is no limit of its own.
    const rows = await this.db.organization.findMany({ where: { stepConcurrency: { gte: 0 } }, select: { id: true, stepConcurrency: true } });
    return new Map(rows.map((row) => [row.id, row.stepConcurrency!]));
  }

  /** Sets (null: clears) the organization's own concurrency limit. */
  async setStepConcurrency(id: string, limit: number | null): Promise<void> {
    await this.db.organization.update({ where: { id }, data: { stepConcurrency: limit } });
  }

  /** Freezes the slug (idempotent); called when the organization's first workflow is published. */
  async freezeSlug(id: string): Promise<void> {
    await this.db.organization.updateMany({ where: { id, slugFrozen: false }, data: { slugFrozen: true } });
  }
}
