import type { RunError } from '../contract/schemas/run';
import type { Run as RunRow, Step as StepRow } from './generated/prisma/client';
import { microsToDb } from './micros';
import type { Db } from './prisma-client';
import { withRunLock } from './run-lock';
import {
  assertMicros,
  isUuid,
  jsonParam,
  micros,
  parseRunError,
  parseRunStatus,
  parseStepStatus,
  type NewRun,
  type RunRecord,
  type RunStepRecord,
} from './run-records';

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
    if (pendingDeps.some((n) => !Number.isSafeInteger(n) || n < 0)) throw new RangeError('createRun: pendingDeps must be non-negative integers');
    const rows = await this.db.$queryRaw<{ id: string }[]>`
      WITH run AS (
        INSERT INTO runs (org_id, user_id, token_id, workflow_id, workflow_version_id, definition, inputs, cap_micros)
        VALUES (${input.orgId}::uuid, ${input.userId}::uuid, ${input.tokenId}::uuid, ${input.workflowId ?? null}::uuid,
                ${input.workflowVersionId ?? null}::uuid, ${jsonParam(input.definition, 'definition')}::jsonb,
                ${jsonParam(input.inputs, 'inputs')}::jsonb, ${microsToDb(input.capMicros)})
        RETURNING id
      ), steps AS (
        INSERT INTO steps (run_id, node_id, pending_deps)
        SELECT run.id, node.node_id, node.pending_deps
        FROM run CROSS JOIN unnest(${nodeIds}::text[], ${pendingDeps}::int[]) AS node(node_id, pending_deps)
      )
      SELECT id FROM run`;
    return rows[0]!.id;
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
   * failed run is harmless, and is how a reaper releases a leftover reservation.
   */
  async failRun(runId: string, error: RunError): Promise<FailRunResult> {
    const errorJson = jsonParam({ code: error.code, message: error.message }, 'error');
    return withRunLock(this.db, runId, async (tx, run) => {
      if (!run) return { failed: false, releasedMicros: 0, cancelled: [], skipped: [] };
      const rows = await tx.$queryRaw<FailRunRow[]>`
        WITH held AS (
          SELECT id, status, reserved_micros FROM steps
          WHERE run_id = ${runId}::uuid AND status IN ('pending', 'queued', 'running')
          FOR UPDATE
        ), stopped AS (
          UPDATE steps s
          SET status = CASE WHEN held.status = 'running' THEN 'cancelled' ELSE 'skipped' END,
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
      return {
        failed: UNFINISHED_RUN.includes(run.status),
        releasedMicros: micros(row.released),
        cancelled: row.cancelled ?? [],
        skipped: row.skipped ?? [],
      };
    });
  }

  /**
   * The run with its steps (ordered by start, unstarted ones last), or null when there is none.
   * With `orgId`, another organization's run is null too: the caller answers 404 either way.
   */
  async getRun(runId: string, orgId?: string): Promise<RunRecord | null> {
    if (!isUuid(runId) || (orgId !== undefined && !isUuid(orgId))) return null;
    const row = await this.db.run.findFirst({
      where: { id: runId, ...(orgId === undefined ? {} : { orgId }) },
      include: { steps: { orderBy: [{ startedAt: { sort: 'asc', nulls: 'last' } }, { nodeId: 'asc' }] } },
    });
    return row ? toRun(row) : null;
  }

  /**
   * Outputs of the completed steps among `nodeIds` (the `${node.port}` sources of a step about to
   * run), by node id. A node that has not completed is absent.
   */
  async stepInputs(runId: string, nodeIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    if (nodeIds.length === 0 || !isUuid(runId)) return found;
    const rows = await this.db.$queryRaw<{ node_id: string; output: Record<string, unknown> | null }[]>`
      SELECT node_id, output FROM steps
      WHERE run_id = ${runId}::uuid AND node_id = ANY(${[...nodeIds]}::text[]) AND status = 'completed'`;
    for (const row of rows) found.set(row.node_id, row.output ?? {});
    return found;
  }
}
