import { randomUUID } from 'node:crypto';
import type { Logger } from '../platform/logger';
import type { Prisma } from './generated/prisma/client';
import { LedgerRepository } from './ledger-repository';
import { microsToDb } from './micros';
import type { Db } from './prisma-client';
import { withRunLock } from './run-lock';
import { assertMicros, isUuid, jsonParam, micros } from './run-records';
import type {
  CompleteStepInput,
  CompleteStepResult,
  FailStepInput,
  FailStepResult,
  ReserveInput,
  ReserveRefusal,
  ReserveResult,
} from './step-transitions';

interface ReserveRow {
  verdict: 'ok' | ReserveRefusal;
  attempt: number | null;
}

interface SettledRow {
  step_id: string;
  cost_micros: bigint;
  held: bigint;
  ready: string[] | null;
  skipped: string[] | null;
}

/**
 * The money-moving step transitions. Each is one transaction under the run's lock (see
 * run-lock.ts) plus one ledger posting; after the lock, one statement does the rest, so the
 * invariants below hold at every commit:
 *
 * - `0 <= runs.reserved_micros = sum(steps.reserved_micros)`, a step holding money only while `running`;
 * - `runs.spent_micros + runs.reserved_micros <= runs.cap_micros` (reserve checks it in the
 *   conditional update of the run row; settling moves at most the held amount from reserved to spent);
 * - `runs.spent_micros = sum(steps.cost_micros)` and `-sum(run_charge entries of the run)`;
 * - only the attempt holding the step's current token can settle it, and only once.
 */
export class StepRepository {
  private readonly logger: Logger | undefined;

  constructor(
    private readonly db: Db,
    options: { logger?: Logger } = {},
  ) {
    this.logger = options.logger;
  }

  /**
   * Starts an attempt: holds `estimateMicros` against the run's cap and makes the caller the step's
   * owner. Refused when the run is not running, the step is not ready (finished, waiting for
   * inputs, or running under a live attempt), or the cap has no room. Taking over a step left
   * `running` by a crashed attempt releases that attempt's reservation first.
   */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    assertMicros(input.estimateMicros, 'estimateMicros');
    const estimate = microsToDb(input.estimateMicros);
    const staleAfterMs = Math.max(0, Math.floor(input.staleAfterMs ?? 0));
    const token = randomUUID();
    return withRunLock(this.db, input.runId, async (tx, run) => {
      if (!run || run.status !== 'running') return { ok: false, reason: 'run_not_running' };
      const rows = await tx.$queryRaw<ReserveRow[]>`
        WITH step AS (
          SELECT id, status, pending_deps, reserved_micros, started_at FROM steps
          WHERE run_id = ${input.runId}::uuid AND node_id = ${input.nodeId}
          FOR UPDATE
        ), verdict AS (
          SELECT step.id, step.reserved_micros AS held,
                 CASE WHEN step.pending_deps <> 0 OR NOT (step.status IN ('pending', 'queued')
                        OR (step.status = 'running' AND step.started_at <= now() - ${staleAfterMs}::int * interval '1 millisecond'))
                      THEN 'step_not_runnable'
                      WHEN r.spent_micros + r.reserved_micros - step.reserved_micros + ${estimate} > r.cap_micros THEN 'cap_exceeded'
                      ELSE 'ok' END AS verdict
          FROM step CROSS JOIN runs r WHERE r.id = ${input.runId}::uuid
        ), run_update AS (
          UPDATE runs r SET reserved_micros = r.reserved_micros - v.held + ${estimate}
          FROM verdict v
          WHERE r.id = ${input.runId}::uuid AND r.status = 'running' AND v.verdict = 'ok'
            AND r.spent_micros + r.reserved_micros - v.held + ${estimate} <= r.cap_micros
          RETURNING r.id
        ), step_update AS (
          UPDATE steps s
          SET status = 'running', attempt = s.attempt + 1, attempt_token = ${token}, reserved_micros = ${estimate},
              started_at = now(), finished_at = NULL
          FROM verdict v, run_update WHERE s.id = v.id
          RETURNING s.attempt
        )
        SELECT v.verdict, u.attempt FROM verdict v LEFT JOIN step_update u ON true`;
      const row = rows[0];
      if (!row) return { ok: false, reason: 'step_not_runnable' };
      if (row.verdict !== 'ok' || row.attempt === null) return { ok: false, reason: row.verdict === 'ok' ? 'cap_exceeded' : row.verdict };
      return { ok: true, attempt: row.attempt, attemptToken: token };
    });
  }

  /**
   * Commits a finished attempt if it still owns the step: step → completed with its output, cost
   * and duration; the run's reservation becomes spending (cost clamped to the reservation); the
   * org is charged once (ledger `run_charge`, unique per step); dependents' pending counts drop by
   * one. A stale attempt commits nothing. Repeating a commit with the same token changes nothing
   * and returns `duplicate: true` with the dependents that are ready now, so a worker that lost the
   * first answer can still enqueue them (job ids make that enqueue idempotent).
   */
  async completeStep(input: CompleteStepInput): Promise<CompleteStepResult> {
    assertMicros(input.costMicros, 'costMicros');
    const cost = microsToDb(input.costMicros);
    const output = jsonParam(input.output, 'output');
    const dependents = [...input.dependents];
    const settled = await withRunLock(this.db, input.runId, async (tx, run) => {
      if (!run) return null;
      const rows = await tx.$queryRaw<SettledRow[]>`
        WITH step AS (
          SELECT id, reserved_micros FROM steps
          WHERE run_id = ${input.runId}::uuid AND node_id = ${input.nodeId} AND status = 'running' AND attempt_token = ${input.attemptToken}
          FOR UPDATE
        ), settled AS (
          UPDATE steps s
          SET status = 'completed', cost_micros = LEAST(${cost}, step.reserved_micros), reserved_micros = 0,
              output = ${output}::jsonb, ms = ${Math.round(input.ms)}::int, error = NULL, finished_at = now()
          FROM step WHERE s.id = step.id
          RETURNING s.id, s.cost_micros
        ), run_update AS (
          UPDATE runs r
          SET reserved_micros = r.reserved_micros - step.reserved_micros, spent_micros = r.spent_micros + settled.cost_micros
          FROM step, settled WHERE r.id = ${input.runId}::uuid
          RETURNING r.id
        ), unblocked AS (
          UPDATE steps d SET pending_deps = d.pending_deps - 1
          FROM settled
          WHERE d.run_id = ${input.runId}::uuid AND d.node_id = ANY(${dependents}::text[]) AND d.pending_deps > 0
          RETURNING d.node_id, d.pending_deps, d.status
        )
        SELECT settled.id AS step_id, settled.cost_micros, step.reserved_micros AS held,
               (SELECT array_agg(node_id ORDER BY node_id) FROM unblocked WHERE pending_deps = 0 AND status IN ('pending', 'queued')) AS ready,
               NULL::text[] AS skipped
        FROM step JOIN settled ON true JOIN run_update ON true`;
      const row = rows[0];
      if (!row) return null;
      await this.charge(tx, { orgId: run.orgId, runId: input.runId, nodeId: input.nodeId, row });
      // A failed or cancelled run's dependents are skipped already; nothing becomes ready there.
      return { row, runRunning: run.status === 'running' };
    });
    if (!settled) return this.replayedCommit(input);
    const charged = micros(settled.row.cost_micros);
    const clamped = this.noteClamp(input, micros(settled.row.held));
    return { committed: true, duplicate: false, ready: settled.runRunning ? (settled.row.ready ?? []) : [], chargedMicros: charged, clamped };
  }

  /**
   * Commits a failed attempt if it still owns the step: the attempt's real cost is charged
   * (clamped to its reservation) and the rest released; step → failed with `error`; the run →
   * failed with the same error (only from pending/running); every other pending/queued step →
   * skipped. Other running attempts keep their reservations and settle themselves when they stop.
   */
  async failStep(input: FailStepInput): Promise<FailStepResult> {
    assertMicros(input.costMicros, 'costMicros');
    const cost = microsToDb(input.costMicros);
    const errorJson = jsonParam({ code: input.error.code, message: input.error.message }, 'error');
    const ms = input.ms === undefined || input.ms === null ? null : Math.round(input.ms);
    const result = await withRunLock(this.db, input.runId, async (tx, run) => {
      if (!run) return null;
      const rows = await tx.$queryRaw<SettledRow[]>`
        WITH step AS (
          SELECT id, reserved_micros FROM steps
          WHERE run_id = ${input.runId}::uuid AND node_id = ${input.nodeId} AND status = 'running' AND attempt_token = ${input.attemptToken}
          FOR UPDATE
        ), settled AS (
          UPDATE steps s
          SET status = 'failed', cost_micros = LEAST(${cost}, step.reserved_micros), reserved_micros = 0,
              error = ${errorJson}::jsonb, ms = ${ms}::int, finished_at = now()
          FROM step WHERE s.id = step.id
          RETURNING s.id, s.cost_micros
        ), run_update AS (
          UPDATE runs r
          SET reserved_micros = r.reserved_micros - step.reserved_micros, spent_micros = r.spent_micros + settled.cost_micros,
              status = CASE WHEN r.status IN ('pending', 'running') THEN 'failed' ELSE r.status END,
              error = CASE WHEN r.status IN ('pending', 'running') THEN ${errorJson}::jsonb ELSE r.error END,
              finished_at = CASE WHEN r.status IN ('pending', 'running') THEN now() ELSE r.finished_at END
          FROM step, settled WHERE r.id = ${input.runId}::uuid
          RETURNING r.id
        ), skipped AS (
          -- Pending and queued steps hold no reservation (only running ones do), so nothing to release.
          UPDATE steps o SET status = 'skipped', finished_at = now()
          FROM settled
          WHERE o.run_id = ${input.runId}::uuid AND o.status IN ('pending', 'queued') AND o.id <> settled.id
          RETURNING o.node_id
        )
        SELECT settled.id AS step_id, settled.cost_micros, step.reserved_micros AS held, NULL::text[] AS ready,
               (SELECT array_agg(node_id ORDER BY node_id) FROM skipped) AS skipped
        FROM step JOIN settled ON true JOIN run_update ON true`;
      const row = rows[0];
      if (!row) return null;
      await this.charge(tx, { orgId: run.orgId, runId: input.runId, nodeId: input.nodeId, row });
      return { row, runFailed: run.status === 'pending' || run.status === 'running' };
    });
    if (!result) return { committed: false, chargedMicros: 0, clamped: false, runFailed: false, skipped: [] };
    const clamped = this.noteClamp(input, micros(result.row.held));
    return { committed: true, chargedMicros: micros(result.row.cost_micros), clamped, runFailed: result.runFailed, skipped: result.row.skipped ?? [] };
  }

  /** Posts the step's charge last in the transaction, so the organization row is locked briefly. */
  private async charge(tx: Prisma.TransactionClient, args: { orgId: string; runId: string; nodeId: string; row: SettledRow }): Promise<void> {
    const cost = micros(args.row.cost_micros);
    if (cost === 0) return;
    await new LedgerRepository(tx).post({ orgId: args.orgId, amountMicros: -cost, kind: 'run_charge', runId: args.runId, stepId: args.row.step_id, note: `step ${args.nodeId}` });
  }

  /** Reports a cost above the reservation: the pricing estimate of that node is wrong. */
  private noteClamp(input: { runId: string; nodeId: string; costMicros: number }, heldMicros: number): boolean {
    if (input.costMicros <= heldMicros) return false;
    this.logger?.warn({ runId: input.runId, nodeId: input.nodeId, costMicros: input.costMicros, reservedMicros: heldMicros }, 'step cost above its reservation; charged the reservation');
    return true;
  }

  /** A commit that changed nothing: a repeat of this attempt's own commit, or a stale attempt's. */
  private async replayedCommit(input: CompleteStepInput): Promise<CompleteStepResult> {
    if (!isUuid(input.runId)) return { committed: false, duplicate: false, ready: [], chargedMicros: 0, clamped: false };
    const rows = await this.db.$queryRaw<{ cost_micros: bigint; ready: string[] | null }[]>`
      SELECT s.cost_micros,
             (SELECT array_agg(d.node_id ORDER BY d.node_id) FROM steps d JOIN runs r ON r.id = d.run_id
              WHERE d.run_id = s.run_id AND d.node_id = ANY(${[...input.dependents]}::text[])
                AND d.pending_deps = 0 AND d.status IN ('pending', 'queued') AND r.status = 'running') AS ready
      FROM steps s
      WHERE s.run_id = ${input.runId}::uuid AND s.node_id = ${input.nodeId} AND s.status = 'completed' AND s.attempt_token = ${input.attemptToken}`;
    const row = rows[0];
    if (!row) return { committed: false, duplicate: false, ready: [], chargedMicros: 0, clamped: false };
    return { committed: true, duplicate: true, ready: row.ready ?? [], chargedMicros: micros(row.cost_micros), clamped: false };
  }
}
