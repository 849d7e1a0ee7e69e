import { AppError } from '../platform/app-error';
import type { LedgerEntry as LedgerEntryRow } from './prisma-generated';
import { microsFromDb, microsToDb } from './micros';
import { inTransaction, type Db } from './prisma-client';

/** Why money moved: credit (top-up), run_charge (a step's cost), refund, adjustment (by an operator). */
export type LedgerKind = 'credit' | 'run_charge' | 'refund' | 'adjustment';

/** One append-only ledger row; positive amounts credit the organization, negative ones charge it. */
export interface LedgerEntry {
  id: string;
  orgId: string;
  amountMicros: number;
  kind: LedgerKind;
  runId: string | null;
  stepId: string | null;
  note: string;
  createdAt: Date;
}

/** A ledger entry and the organization's balance right after it. */
export interface LedgerPosting {
  entry: LedgerEntry;
  balanceMicros: number;
}

/**
 * What {@link LedgerRepository.post} records. Never a step's charge: `run_charge` entries are
 * written by the step and run transition functions alone (`svc_charge_ledger`,
 * prisma/functions/money-holds.sql), in the transaction that moves the run's hold, so the
 * ledger is charged in one place.
 */
export interface NewLedgerEntry {
  orgId: string;
  amountMicros: number;
  kind: Exclude<LedgerKind, 'run_charge'>;
  runId?: string | null;
  /** With a step (a refund of its charge, say), the entry is idempotent: one entry per (step, kind) however often it is posted. */
  stepId?: string | null;
  note?: string;
}

interface PostedRow {
  id: string;
  org_id: string;
  amount_micros: bigint;
  kind: string;
  run_id: string | null;
  step_id: string | null;
  note: string;
  created_at: Date;
  balance_micros: bigint;
}

const KINDS: readonly string[] = ['credit', 'run_charge', 'refund', 'adjustment'] satisfies LedgerKind[];

function toEntry(row: LedgerEntryRow): LedgerEntry {
  if (!KINDS.includes(row.kind)) throw new Error(`ledger entry ${row.id} has unknown kind "${row.kind}"`);
  return { ...row, amountMicros: microsFromDb(row.amountMicros), kind: row.kind as LedgerKind };
}

function fromPostedRow(row: PostedRow): LedgerEntry {
  return toEntry({ id: row.id, orgId: row.org_id, amountMicros: row.amount_micros, kind: row.kind, runId: row.run_id, stepId: row.step_id, note: row.note, createdAt: row.created_at });
}

function unknownOrg(orgId: string): AppError {
  return new AppError({ code: 'not_found', message: `organization ${orgId} does not exist` });
}

/**
 * The organizations' ledger. Every entry and the matching change of the balance are written in one
 * transaction (a credit here by one statement; a step's charge by the step transitions, on the run's
 * row until the run finishes and then on `organizations.balance_micros`: docs/money.md, Deferred
 * settlement), so the balance always equals the sum of the entries (see {@link LedgerRepository.audit}).
 */
export class LedgerRepository {
  constructor(private readonly db: Db) {}

  /**
   * Appends an entry and moves the balance by its amount. When the entry names a step and that
   * step already has an entry of this kind, nothing changes and `duplicate` is true (`entry` is the
   * earlier one): settling a step twice charges it once.
   */
  async post(input: NewLedgerEntry): Promise<LedgerPosting & { duplicate: boolean }> {
    const amount = microsToDb(input.amountMicros);
    const runId = input.runId ?? null;
    const stepId = input.stepId ?? null;
    return inTransaction(this.db, (tx) => new LedgerRepository(tx).postIn(input, amount, runId, stepId));
  }

  /** `post` inside a transaction (the caller's, or the one `post` opened). */
  private async postIn(input: NewLedgerEntry, amount: bigint, runId: string | null, stepId: string | null): Promise<LedgerPosting & { duplicate: boolean }> {
    const rows = await this.db.$queryRaw<PostedRow[]>`
      WITH entry AS (
        INSERT INTO ledger_entries (org_id, amount_micros, kind, run_id, step_id, note)
        SELECT o.id, ${amount}, ${input.kind}, ${runId}::uuid, ${stepId}::uuid, ${input.note ?? ''}
        FROM organizations o WHERE o.id = ${input.orgId}::uuid
        ON CONFLICT (step_id, kind) DO NOTHING
        RETURNING id, org_id, amount_micros, kind, run_id, step_id, note, created_at
      ), balance AS (
        UPDATE organizations o SET balance_micros = o.balance_micros + entry.amount_micros
        FROM entry WHERE o.id = entry.org_id
        RETURNING o.balance_micros
      )
      SELECT entry.*, balance.balance_micros FROM entry CROSS JOIN balance`;
    const row = rows[0];
    // The balance from a statement of its own (svc_org_balance: the row's less unfinished runs'
    // deferred charges): its snapshot sees this transaction's update and whatever committed while
    // that update waited for the row (a run settled meanwhile), which the statement above, reading
    // the runs from its older snapshot, would count twice (M2 found it: seed -342336106).
    if (row) return { entry: fromPostedRow(row), balanceMicros: await this.balance(input.orgId), duplicate: false };
    if (stepId === null) throw unknownOrg(input.orgId);
    const existing = await this.db.ledgerEntry.findUnique({ where: { stepId_kind: { stepId, kind: input.kind } } });
    if (!existing) throw unknownOrg(input.orgId);
    return {
      entry: toEntry(existing),
      balanceMicros: await this.balance(input.orgId),
      duplicate: true,
    };
  }

  /** Adds a positive amount of micro-USD to the organization's balance. */
  async credit(orgId: string, micros: number, note: string): Promise<LedgerPosting> {
    if (!Number.isSafeInteger(micros) || micros <= 0) throw new RangeError(`a credit must be a positive whole number of micro-USD, got ${micros}`);
    const { entry, balanceMicros } = await this.post({ orgId, amountMicros: micros, kind: 'credit', note });
    return { entry, balanceMicros };
  }

  /**
   * Credits unless the organization already has a credit with exactly this note; for one-off grants
   * such as the dev bootstrap's. Concurrent calls credit once (the organization row is locked).
   */
  async creditOnce(orgId: string, micros: number, note: string): Promise<LedgerPosting & { credited: boolean }> {
    return inTransaction(this.db, async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM organizations WHERE id = ${orgId}::uuid FOR UPDATE`;
      if (locked.length === 0) throw unknownOrg(orgId);
      const ledger = new LedgerRepository(tx);
      const earlier = await tx.ledgerEntry.findFirst({ where: { orgId, kind: 'credit', note }, orderBy: { createdAt: 'asc' } });
      if (earlier) {
        return { entry: toEntry(earlier), balanceMicros: await ledger.balance(orgId), credited: false };
      }
      return { ...(await ledger.credit(orgId, micros, note)), credited: true };
    });
  }

  /**
   * The organization's balance in micro-USD: its unfinished runs' charges included, which its row
   * shows only once each run finishes (`svc_org_balance`; docs/money.md, Deferred settlement).
   */
  async balance(orgId: string): Promise<number> {
    const [row] = await this.db.$queryRaw<{ balance: string | null }[]>`SELECT svc_org_balance(${orgId}::uuid)::text AS balance`;
    if (row?.balance === undefined || row.balance === null) throw unknownOrg(orgId);
    return microsFromDb(row.balance);
  }

  /** The organization's entries, newest first. */
  async entries(orgId: string, options: { limit?: number } = {}): Promise<LedgerEntry[]> {
    const rows = await this.db.ledgerEntry.findMany({ where: { orgId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: options.limit ?? 100 });
    return rows.map(toEntry);
  }

  /** The running total beside the sum of the entries; they are equal unless someone wrote around this repository. */
  async audit(orgId: string): Promise<{ balanceMicros: number; ledgerTotalMicros: number }> {
    const [balanceMicros, total] = await Promise.all([this.balance(orgId), this.db.ledgerEntry.aggregate({ where: { orgId }, _sum: { amountMicros: true } })]);
    return { balanceMicros, ledgerTotalMicros: microsFromDb(total._sum.amountMicros ?? 0n) };
  }
}
