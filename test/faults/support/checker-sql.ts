import type { Pool } from 'pg';

/**
 * Every query of the fault suite's checker, in one place. Amounts come back as text (BIGINT) and
 * are turned into numbers here: micro-USD amounts of a test stay far below 2^53.
 *
 * The money model read (prisma/schema.prisma, prisma/functions/*.sql, docs/money.md):
 * - `steps.cost_micros` is everything a step was charged over its attempts (a lost attempt adds
 *   its lost charge when it is taken over or cancelled); `runs.spent_micros` is their sum;
 * - `ledger_entries` holds one `run_charge` per step (-cost), so `runs.charged_micros` is minus the
 *   sum of the run's `run_charge` rows, and `organizations.balance_micros` the sum of all rows;
 * - `runs.held_micros` is what the run holds of `organizations.held_micros`; a terminal run holds
 *   nothing once its attempts settled, nor reserves anything (`runs.reserved_micros`);
 * - an unfinished run's charges reach the organization row only when it finishes: until then
 *   `runs.charged_micros - runs.settled_micros` is still counted in the row's `held_micros` and not
 *   yet taken from its `balance_micros` (docs/money.md, Deferred settlement), so the balance and
 *   the holds are the row's less those deferred charges, and a finished run defers nothing.
 */

export interface RunRow {
  id: string;
  orgId: string;
  status: string;
  capMicros: number;
  reservedMicros: number;
  spentMicros: number;
  heldMicros: number;
  chargedMicros: number;
  outputs: unknown;
  definition: unknown;
  /** The run's inputs (a batch row's tag travels in them). */
  inputs: unknown;
}

export interface StepRow {
  id: string;
  runId: string;
  nodeId: string;
  status: string;
  attempt: number;
  reservedMicros: number;
  costMicros: number;
  /** What the run's ledger charged this step (sum of its run_charge rows, positive). */
  ledgerMicros: number;
  /** How many run_charge rows the step has (the schema allows one). */
  ledgerRows: number;
}

export interface OrgRow {
  id: string;
  /** The row's balance less its runs' deferred charges. */
  balanceMicros: number;
  /** The row's holds less its runs' deferred charges. */
  heldMicros: number;
  ledgerSumMicros: number;
  /** What the organization's unfinished runs hold. */
  runsHeldMicros: number;
  /** Finished runs of the organization that still hold or reserve anything (there must be none). */
  finishedHolding: number;
  /** Finished runs of the organization whose charges are not all on its row (there must be none). */
  finishedUnsettled: number;
}

export interface RunLedgerRow {
  runId: string;
  /** Minus the sum of the run's run_charge rows. */
  chargedByLedgerMicros: number;
  /** run_charge rows of the run that name no step of it (should be none). */
  orphanRows: number;
}

const n = (value: string | number | null): number => Number(value ?? 0);

/** The runs named, or every run in the database when `runIds` is undefined. */
export async function loadRuns(pool: Pool, runIds: readonly string[] | undefined): Promise<RunRow[]> {
  const { rows } = await pool.query<Record<string, string | null>>(
    `SELECT id, org_id, status, cap_micros::text, reserved_micros::text, spent_micros::text, held_micros::text,
            charged_micros::text, outputs, definition, inputs
       FROM runs
      WHERE $1::uuid[] IS NULL OR id = ANY($1::uuid[])
      ORDER BY created_at`,
    [runIds ?? null],
  );
  return rows.map((r) => ({
    id: r.id!,
    orgId: r.org_id!,
    status: r.status!,
    capMicros: n(r.cap_micros),
    reservedMicros: n(r.reserved_micros),
    spentMicros: n(r.spent_micros),
    heldMicros: n(r.held_micros),
    chargedMicros: n(r.charged_micros),
    outputs: r.outputs as unknown,
    definition: r.definition as unknown,
    inputs: r.inputs as unknown,
  }));
}

/** The steps of the runs with what the ledger charged each. */
export async function loadSteps(pool: Pool, runIds: readonly string[]): Promise<StepRow[]> {
  const { rows } = await pool.query<Record<string, string | number | null>>(
    `SELECT s.id, s.run_id, s.node_id, s.status, s.attempt, s.reserved_micros::text, s.cost_micros::text,
            COALESCE(-SUM(l.amount_micros), 0)::text AS ledger_micros, COUNT(l.id)::int AS ledger_rows
       FROM steps s
       LEFT JOIN ledger_entries l ON l.step_id = s.id AND l.kind = 'run_charge'
      WHERE s.run_id = ANY($1::uuid[])
      GROUP BY s.id
      ORDER BY s.run_id, s.node_id`,
    [runIds],
  );
  return rows.map((r) => ({
    id: String(r.id),
    runId: String(r.run_id),
    nodeId: String(r.node_id),
    status: String(r.status),
    attempt: n(r.attempt),
    reservedMicros: n(r.reserved_micros),
    costMicros: n(r.cost_micros),
    ledgerMicros: n(r.ledger_micros),
    ledgerRows: n(r.ledger_rows),
  }));
}

/** Per run: what its run_charge rows add up to, and how many of them name no step of the run. */
export async function loadRunLedgers(pool: Pool, runIds: readonly string[]): Promise<RunLedgerRow[]> {
  const { rows } = await pool.query<Record<string, string | number>>(
    `SELECT l.run_id, (-SUM(l.amount_micros))::text AS charged,
            COUNT(*) FILTER (WHERE s.id IS NULL OR s.run_id <> l.run_id)::int AS orphans
       FROM ledger_entries l
       LEFT JOIN steps s ON s.id = l.step_id
      WHERE l.kind = 'run_charge' AND l.run_id = ANY($1::uuid[])
      GROUP BY l.run_id`,
    [runIds],
  );
  return rows.map((r) => ({ runId: String(r.run_id), chargedByLedgerMicros: n(r.charged), orphanRows: n(r.orphans) }));
}

/** Every organization with its ledger's sum and what its runs hold. */
export async function loadOrgs(pool: Pool): Promise<OrgRow[]> {
  const { rows } = await pool.query<Record<string, string>>(
    `SELECT o.id, (o.balance_micros - d.deferred)::text AS balance_micros, (o.held_micros - d.deferred)::text AS held_micros,
            COALESCE((SELECT SUM(amount_micros) FROM ledger_entries l WHERE l.org_id = o.id), 0)::text AS ledger_sum,
            COALESCE((SELECT SUM(held_micros) FROM runs r WHERE r.org_id = o.id AND r.status IN ('pending', 'running')), 0)::text AS runs_held,
            (SELECT count(*) FROM runs r WHERE r.org_id = o.id AND r.status NOT IN ('pending', 'running') AND (r.held_micros <> 0 OR r.reserved_micros <> 0))::text AS finished_holding,
            (SELECT count(*) FROM runs r WHERE r.org_id = o.id AND r.status NOT IN ('pending', 'running') AND r.charged_micros <> r.settled_micros)::text AS finished_unsettled
       FROM organizations o
      CROSS JOIN LATERAL (SELECT COALESCE(SUM(charged_micros - settled_micros), 0) AS deferred FROM runs r WHERE r.org_id = o.id) d
      ORDER BY o.id`,
  );
  return rows.map((r) => ({
    id: r.id!,
    balanceMicros: n(r.balance_micros),
    heldMicros: n(r.held_micros),
    ledgerSumMicros: n(r.ledger_sum),
    runsHeldMicros: n(r.runs_held),
    finishedHolding: n(r.finished_holding),
    finishedUnsettled: n(r.finished_unsettled),
  }));
}
