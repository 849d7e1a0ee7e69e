import type { RunError } from '../contract/schemas/run';
import { AppError } from '../platform/app-error';
import type { Run as RunRow, Step as StepRow } from './prisma-generated';
import { LedgerRepository } from './ledger-repository';
import { queryRows, type Db } from './prisma-client';
import { withRunLock } from './run-lock';
import { listRunSummaries, type RunListOptions, type RunListPage } from './run-history';
import {
  assertMicros,
  isUuid,
  jsonParam,
  micros,
  parseRunError,
  parseRunStatus,
  parseStepStatus,
  type NewRun,
  type RunContextRecord,
  type RunRecord,
  type RunStepRecord,
} from './run-records';

/** `createRun` with `requireCredit` refused: the organization's balance is not positive. */
export class InsufficientCreditError extends Error {
  constructor(readonly balanceMicros: number) {
    super(`the organization's balance is ${balanceMicros} micro-USD`);
    this.name = 'InsufficientCreditError';
  }
}

/** What {@link RunRepository.failRun} did. */
export interface FailRunResult {
  /** True when this call moved the run from pending/running to failed (false: it had already finished). */
  failed: boolean;
  /** Reservations of unfinished attempts given back to the run, micro-USD. */
  releasedMicros: number;
  /** Steps that were running: their attempts can no longer commit. */
  cancelled: string[];
  /** Steps that had not started. */
  skipped: string[];
}

interface FailRunRow {
  released: bigint;
  cancelled: string[] | null;
  skipped: string[] | null;
}

const UNFINISHED_RUN = ['pending', 'running'];

function toStep(runId: string, row: StepRow): RunStepRecord {
  return {
    nodeId: row.nodeId,
    status: parseStepStatus(row.status, `${runId}/${row.nodeId}`),
    attempt: row.attempt,
    pendingDeps: row.pendingDeps,
    costMicros: micros(row.costMicros),
    reservedMicros: micros(row.reservedMicros),
    ms: row.ms,
    error: parseRunError(row.error),
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
  };
}

function toRun(row: RunRow & { steps: StepRow[] }): RunRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    userId: row.userId,
    tokenId: row.tokenId,
    workflowId: row.workflowId,
    workflowVersionId: row.workflowVersionId,
    status: parseRunStatus(row.status, row.id),
    definition: row.definition,
    inputs: row.inputs,
    outputs: (row.outputs ?? null) as Record<string, unknown> | null,
    error: parseRunError(row.error),
    capMicros: micros(row.capMicros),
    spentMicros: micros(row.spentMicros),
    reservedMicros: micros(row.reservedMicros),
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    steps: row.steps.map((step) => toStep(row.id, step)),
  };
}

/**
 * Runs as a whole: creation, the run-level status transitions and reads. Per-step money moves
 * (reserve, complete, fail) are {@link StepRepository}'s. No business rules: the caller decides
 * when a run completes; this class makes each transition happen at most once.
 */
export class RunRepository {
  constructor(private readonly db: Db) {}

  /**
   * Stores a run (status `pending`) and one step row per executable node in one statement, hence
   * atomically: a run is never visible without its steps. Returns the run id.
   */
  async createRun(input: NewRun): Promise<string> {
    assertMicros(input.capMicros, 'capMicros');
    const nodeIds = input.steps.map((s) => s.nodeId);
    if (new Set(nodeIds).size !== nodeIds.length) throw new RangeError('createRun: node ids must be unique');
    const pendingDeps = input.steps.map((s) => s.pendingDeps);
    const status = input.start ? 'running' : 'pending';
    const requireCredit = input.requireCredit ?? false;
    if (pendingDeps.some((n) => !Number.isSafeInteger(n) || n < 0)) throw new RangeError('createRun: pendingDeps must be non-negative integers');
    const reserved = input.steps.map((s) => s.reservation?.estimateMicros ?? 0);
    reserved.forEach((m) => assertMicros(m, 'reservation.estimateMicros'));
    const reservedTotal = reserved.reduce((a, b) => a + b, 0);
    if (reservedTotal > 0 && !input.start) throw new RangeError('createRun: only a run stored running may hold reservations');
    if (reservedTotal > input.capMicros) throw new RangeError('createRun: the reservations exceed the cap');
    const tokens = input.steps.map((s) => s.reservation?.attemptToken ?? null);
    if (input.id !== undefined && !isUuid(input.id)) throw new RangeError('createRun: id must be a UUID');
    // The balance condition and the insert read one snapshot: the refusal reports the balance that caused it.
    const rows = await queryRows<{ id: string | null; balance: bigint | string | null }>(
      this.db,
      `WITH run AS (
         INSERT INTO runs (id, org_id, user_id, token_id, workflow_id, workflow_version_id, definition, inputs, cap_micros, status, started_at, reserved_micros)
         SELECT COALESCE($16::uuid, gen_random_uuid()), o.id, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::jsonb, $7::jsonb, $8::bigint, $9::text, CASE WHEN $9::text = 'running' THEN now() END, $15::bigint
         FROM organizations o
         WHERE o.id = $1::uuid AND (NOT $10::boolean OR o.balance_micros > 0)
         RETURNING id
       ), steps AS (
         -- A reserved step is running under its token but not started by a worker yet (started_at null: see RunRecoveryRepository.listRunnable).
         INSERT INTO steps (run_id, node_id, pending_deps, status, attempt, attempt_token, reserved_micros)
         SELECT run.id, node.node_id, node.pending_deps,
                CASE WHEN node.token IS NULL THEN 'pending' ELSE 'running' END, CASE WHEN node.token IS NULL THEN 0 ELSE 1 END, node.token, node.reserved
         FROM run CROSS JOIN unnest($11::text[], $12::int[], $13::text[], $14::bigint[]) AS node(node_id, pending_deps, token, reserved)
       )
       SELECT (SELECT id FROM run) AS id, (SELECT balance_micros FROM organizations WHERE id = $1::uuid) AS balance`,
      [
        input.orgId,
        input.userId,
        input.tokenId,
        input.workflowId ?? null,
        input.workflowVersionId ?? null,
        jsonParam(input.definition, 'definition'),
        jsonParam(input.inputs, 'inputs'),
        input.capMicros,
        status,
        requireCredit,
        nodeIds,
        pendingDeps,
        tokens,
        reserved,
        reservedTotal,
        input.id ?? null,
      ],
    );
    const row = rows[0]!;
    if (row.id !== null) return row.id;
    if (row.balance === null) throw new AppError({ code: 'not_found', message: `organization ${input.orgId} does not exist` });
    throw new InsufficientCreditError(micros(row.balance));
  }


  /** pending → running (sets `started_at`); false when the run was not pending. */
  async markRunning(runId: string): Promise<boolean> {
    if (!isUuid(runId)) return false;
    const count = await this.db.$executeRaw`
      UPDATE runs SET status = 'running', started_at = now() WHERE id = ${runId}::uuid AND status = 'pending'`;
    return count === 1;
  }

  /**
   * running → completed with its outputs and `finished_at`. True for exactly one call per run;
   * false when the run is not running (already completed, failed, cancelled, or unknown).
   */
  async completeRun(runId: string, outputs: Record<string, unknown>): Promise<boolean> {
    if (!isUuid(runId)) return false;
    const count = await this.db.$executeRaw`
      UPDATE runs SET status = 'completed', outputs = ${jsonParam(outputs, 'outputs')}::jsonb, finished_at = now()
      WHERE id = ${runId}::uuid AND status = 'running'`;
    return count === 1;
  }

  /**
   * Fails a run for a reason of its own (cap exceeded before a step started, a lost job, ...):
   * pending/running → failed with `error`. Whatever the run's status, every unfinished step is
   * stopped and its reservation released: running attempts become `cancelled` (their late commits
   * are no-ops, so they charge nothing), pending/queued steps `skipped`. Calling it again on a
   * failed run is harmless, and is how a reaper releases a leftover reservation. `nodeId` names
   * the step the run failed on before it started: it becomes `failed` with `error`.
   */
  async failRun(runId: string, error: RunError, options: { nodeId?: string } = {}): Promise<FailRunResult> {
    const errorJson = jsonParam({ code: error.code, message: error.message }, 'error');
    const culprit = options.nodeId ?? null;
    return withRunLock(this.db, runId, async (tx, run) => {
      if (!run) return { failed: false, releasedMicros: 0, cancelled: [], skipped: [] };
      const rows = await tx.$queryRaw<FailRunRow[]>`
        WITH held AS (
          SELECT id, node_id, status, reserved_micros FROM steps
          WHERE run_id = ${runId}::uuid AND status IN ('pending', 'queued', 'running')
          FOR UPDATE
        ), stopped AS (
          -- The step the run failed on (it never started: the cap had no room, its inputs were unusable) carries the error.
          UPDATE steps s
          SET status = CASE WHEN held.status = 'running' THEN 'cancelled' WHEN held.node_id = ${culprit}::text THEN 'failed' ELSE 'skipped' END,
              error = CASE WHEN held.status <> 'running' AND held.node_id = ${culprit}::text THEN ${errorJson}::jsonb ELSE s.error END,
              reserved_micros = 0, finished_at = now()
          FROM held WHERE s.id = held.id
          RETURNING s.node_id, s.status
        ), run_update AS (
          UPDATE runs r
          SET reserved_micros = r.reserved_micros - (SELECT COALESCE(sum(reserved_micros), 0) FROM held)::bigint,
              status = CASE WHEN r.status IN ('pending', 'running') THEN 'failed' ELSE r.status END,
              error = CASE WHEN r.status IN ('pending', 'running') THEN ${errorJson}::jsonb ELSE r.error END,
              finished_at = CASE WHEN r.status IN ('pending', 'running') THEN now() ELSE r.finished_at END
          WHERE r.id = ${runId}::uuid
          RETURNING r.id
        )
        SELECT (SELECT COALESCE(sum(reserved_micros), 0) FROM held)::bigint AS released,
               (SELECT array_agg(node_id ORDER BY node_id) FROM stopped WHERE status = 'cancelled') AS cancelled,
               (SELECT array_agg(node_id ORDER BY node_id) FROM stopped WHERE status = 'skipped') AS skipped
        FROM run_update`;
      const row = rows[0]!;
      // Attempts retried before the run stopped already spent money; the ledger gets it now
      // (once per step: a repeated failRun posts nothing new).
      const spent = await tx.$queryRaw<{ id: string; node_id: string; cost_micros: bigint }[]>`
        SELECT id, node_id, cost_micros FROM steps WHERE run_id = ${runId}::uuid AND status = 'cancelled' AND cost_micros > 0`;
      const ledger = new LedgerRepository(tx);
      for (const step of spent) {
        await ledger.post({ orgId: run.orgId, amountMicros: -micros(step.cost_micros), kind: 'run_charge', runId, stepId: step.id, note: `step ${step.node_id}` });
      }
      return {
        failed: UNFINISHED_RUN.includes(run.status),
        releasedMicros: micros(row.released),
        cancelled: row.cancelled ?? [],
        skipped: row.skipped ?? [],
      };
    });
  }

  /** What a step executor needs of a run (no steps): null when there is no such run. */
  async getRunContext(runId: string): Promise<RunContextRecord | null> {
    if (!isUuid(runId)) return null;
    const row = await this.db.run.findUnique({ where: { id: runId }, select: { orgId: true, status: true, definition: true, inputs: true } });
    return row ? { orgId: row.orgId, status: parseRunStatus(row.status, runId), definition: row.definition, inputs: row.inputs } : null;
  }

  /**
   * The run with its steps (ordered by start, unstarted ones last), or null when there is none.
   * With `orgId`, another organization's run is null too: the caller answers 404 either way.
   */
  async getRun(runId: string, orgId?: string): Promise<RunRecord | null> {
    if (!isUuid(runId) || (orgId !== undefined && !isUuid(orgId))) return null;
    const read = (db: Db) =>
      db.run.findFirst({
        where: { id: runId, ...(orgId === undefined ? {} : { orgId }) },
        include: { steps: { orderBy: [{ startedAt: { sort: 'asc', nulls: 'last' } }, { nodeId: 'asc' }] } },
      });
    // Prisma reads the run and its steps with two statements: one snapshot for both, so the run's
    // reserved and spent amounts always agree with its steps, even while they settle.
    const row = '$transaction' in this.db ? await this.db.$transaction((tx) => read(tx), { isolationLevel: 'RepeatableRead' }) : await read(this.db);
    return row ? toRun(row) : null;
  }

  /**
   * Outputs of the completed steps among `nodeIds` (the `${node.port}` sources of a step about to
   * run), by node id. A node that has not completed is absent.
   */
  async stepInputs(runId: string, nodeIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    if (nodeIds.length === 0 || !isUuid(runId)) return found;
    const rows = await queryRows<{ node_id: string; output: Record<string, unknown> | null }>(
      this.db,
      `SELECT node_id, output FROM steps WHERE run_id = $1::uuid AND node_id = ANY($2::text[]) AND status = 'completed'`,
      [runId, [...nodeIds]],
    );
    for (const row of rows) found.set(row.node_id, row.output ?? {});
    return found;
  }

  /** A page of the organization's runs, newest first (run history; see run-history.ts). */
  async listRuns(orgId: string, options: RunListOptions): Promise<RunListPage> {
    return listRunSummaries(this.db, orgId, options);
  }
}
