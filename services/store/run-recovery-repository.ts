import { queryRows, type SqlPool } from './hot-sql';
import { isUuid } from './run-records';

/** A step of a running run whose attempt has been running for longer than the reaper allows. */
export interface StuckStep {
  runId: string;
  nodeId: string;
  attempt: number;
  startedAt: Date;
}

/** A step of a running run that may start now: its inputs are all there and no attempt holds it. */
export interface RunnableStep {
  runId: string;
  nodeId: string;
}

/** A stopped run's steps that are still `running`, with when each attempt started. */
export interface OpenStepsOfStoppedRun {
  runId: string;
  steps: { nodeId: string; startedAt: Date }[];
}

interface StepKeyRow {
  run_id: string;
  node_id: string;
}

/**
 * Read-only queries for the stuck-run reaper, which rebuilds the queue from Postgres (the source
 * of truth) when jobs were lost: it re-enqueues what these return, and the step worker's
 * `reserve` decides, under the run's lock, whether the step really starts. Both scan running runs
 * through the `runs(status, created_at)` index and their steps through `steps(run_id, node_id)`.
 * They read the run and step tables, so they run on the hot paths' pool (hot-sql.ts).
 */
export class RunRecoveryRepository {
  constructor(private readonly pool: SqlPool) {}

  /**
   * Steps of running runs that are `running` under an attempt started before `startedBefore`
   * (its worker probably died), oldest first. Re-enqueue them; `reserve` with a matching
   * `staleAfterMs` takes them over and releases the dead attempt's reservation.
   */
  async findStuck(options: { startedBefore: Date; limit?: number }): Promise<StuckStep[]> {
    const rows = await queryRows<StepKeyRow & { attempt: number; started_at: Date }>(
      this.pool,
      `SELECT s.run_id, s.node_id, s.attempt, s.started_at
       FROM runs r JOIN steps s ON s.run_id = r.id
       WHERE r.status = 'running' AND s.status = 'running' AND s.started_at < $1::timestamptz
       ORDER BY s.started_at
       LIMIT $2`,
      [options.startedBefore, options.limit ?? 100],
    );
    return rows.map((row) => ({ runId: row.run_id, nodeId: row.node_id, attempt: row.attempt, startedAt: row.started_at }));
  }

  /**
   * Attempts still `running` in runs that have stopped (failed, cancelled or completed) while
   * holding a reservation: a step failed its run while its siblings' attempts were lost with their
   * workers, whose redeliveries then found the run stopped and left them. By run, oldest stop
   * first: every running step of the run, with when its attempt started (a step reserved with its
   * run and never taken counts from the run's stop). Read through the partial index
   * `runs_stopped_reserving_idx`, which holds only such runs.
   */
  async findOpenInStopped(options: { limit?: number } = {}): Promise<OpenStepsOfStoppedRun[]> {
    const rows = await queryRows<StepKeyRow & { started_at: Date }>(
      this.pool,
      `SELECT s.run_id, s.node_id, COALESCE(s.started_at, r.finished_at, r.created_at) AS started_at
       FROM (SELECT id, finished_at, created_at FROM runs
             WHERE status <> ALL (ARRAY['pending'::text, 'running'::text]) AND reserved_micros > 0
             ORDER BY finished_at LIMIT $1) r
       JOIN steps s ON s.run_id = r.id
       WHERE s.status = 'running'
       ORDER BY r.finished_at, s.node_id`,
      [options.limit ?? 100],
    );
    const byRun = new Map<string, OpenStepsOfStoppedRun>();
    for (const row of rows) {
      const run = byRun.get(row.run_id) ?? byRun.set(row.run_id, { runId: row.run_id, steps: [] }).get(row.run_id)!;
      run.steps.push({ nodeId: row.node_id, startedAt: row.started_at });
    }
    return [...byRun.values()];
  }

  /**
   * Ready steps (no pending dependency, `pending` or `queued`, or reserved at the run's creation
   * and not taken by a worker yet: `running` with no `started_at`) of running runs, optionally of
   * one run, oldest run first. Enqueueing them again is safe: job ids are derived from run and
   * node, and a step whose job is alive is skipped by the queue's `requeue`.
   */
  async listRunnable(options: { runId?: string; limit?: number } = {}): Promise<RunnableStep[]> {
    if (options.runId !== undefined && !isUuid(options.runId)) return [];
    const runId = options.runId ?? null;
    const rows = await queryRows<StepKeyRow>(
      this.pool,
      `SELECT s.run_id, s.node_id
       FROM runs r JOIN steps s ON s.run_id = r.id
       WHERE r.status = 'running' AND ($1::uuid IS NULL OR r.id = $1::uuid)
         AND s.pending_deps = 0 AND (s.status IN ('pending', 'queued') OR (s.status = 'running' AND s.started_at IS NULL))
       ORDER BY r.created_at, s.node_id
       LIMIT $2`,
      [runId, options.limit ?? 100],
    );
    return rows.map((row) => ({ runId: row.run_id, nodeId: row.node_id }));
  }

  /**
   * Running runs whose steps have all completed for at least `graceMs` but that never completed:
   * the worker that finished the last step died before completing the run.
   */
  async findFinishable(options: { graceMs: number; limit?: number }): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.pool,
      `SELECT r.id FROM runs r
       WHERE r.status = 'running'
         AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run_id = r.id AND s.status <> 'completed')
         AND COALESCE((SELECT max(s.finished_at) FROM steps s WHERE s.run_id = r.id), r.started_at, r.created_at)
             < now() - $1::int * interval '1 millisecond'
       ORDER BY r.created_at
       LIMIT $2`,
      [Math.max(0, Math.floor(options.graceMs)), options.limit ?? 100],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Deletes up to `limit` idempotency keys older than 24 hours, oldest first (they no longer
   * attach; svc_create_runs replaces one whose key is sent again); answers how many.
   */
  async deleteExpiredIdempotencyKeys(options: { limit?: number } = {}): Promise<number> {
    const [row] = await queryRows<{ deleted: number }>(
      this.pool,
      `WITH deleted AS (
         DELETE FROM idempotency_keys WHERE (org_id, key) IN (
           SELECT org_id, key FROM idempotency_keys WHERE created_at <= now() - interval '24 hours' ORDER BY created_at LIMIT $1)
         RETURNING 1)
       SELECT count(*)::int AS deleted FROM deleted`,
      [options.limit ?? 1000],
    );
    return row!.deleted;
  }

  /** Unfinished runs whose own deadline (maxDurationSeconds) is at or before `now`, earliest first. */
  async findPastDeadline(options: { now: Date; limit?: number }): Promise<string[]> {
    // The predicate is the partial index's (runs_unfinished_deadline_at_idx): a finished run is not in it.
    const rows = await queryRows<{ id: string }>(
      this.pool,
      `SELECT id FROM runs
       WHERE deadline_at IS NOT NULL AND status = ANY (ARRAY['pending'::text, 'running'::text]) AND deadline_at <= $1::timestamptz
       ORDER BY deadline_at
       LIMIT $2`,
      [options.now, options.limit ?? 100],
    );
    return rows.map((row) => row.id);
  }

  /** Running runs that started before `startedBefore`: past the run timeout. */
  async findTimedOut(options: { startedBefore: Date; limit?: number }): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.pool,
      `SELECT id FROM runs
       WHERE status = 'running' AND COALESCE(started_at, created_at) < $1::timestamptz
       ORDER BY created_at
       LIMIT $2`,
      [options.startedBefore, options.limit ?? 100],
    );
    return rows.map((row) => row.id);
  }
}
