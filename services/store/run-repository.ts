import type { RunError } from '../contract/schemas/run';
import { AppError } from '../platform/app-error';
import type { Database } from './database';
import type { PrismaClient } from './prisma-client';
import { listRunSummaries, readRunRecord, type RunListOptions, type RunListPage } from './run-history';
import {
  assertMicros,
  isUuid,
  outputCacheModeOf,
  parseRunStatus,
  type NewRun,
  type RunContextRecord,
  type RunRecord,
} from './run-records';
import * as sql from './hot-sql';
import { KeyedBatcher, sendTogether } from './keyed-batcher';
import { isDatabaseUnavailable } from './store-outage';

/**
 * `createRun` with `requireCredit` refused (code `insufficient_credit`): what the organization may
 * still spend (its balance less what its unfinished runs hold, `details.balanceMicros`) is not
 * positive, or does not cover the first step reserved with the run.
 */
export function insufficientCredit(balanceMicros: number): AppError {
  return new AppError({ code: 'insufficient_credit', message: `the organization's available balance is ${balanceMicros} micro-USD`, details: { balanceMicros } });
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

/**
 * Creations of one organization stored in one transaction at most (RunRepository.createRun): a
 * batch holds the organization's row while it inserts its runs, so a bigger one keeps the row's
 * other writers (settlements) waiting longer.
 */
export const CREATION_BATCH = 32;

/**
 * Runs as a whole: creation, the run-level status transitions and reads. Per-step money moves
 * (reserve, complete, fail) are {@link StepRepository}'s. No business rules: the caller decides
 * when a run completes; this class makes each transition happen at most once.
 */
export class RunRepository {
  private readonly prisma: PrismaClient;
  private readonly pool: sql.SqlPool;

  private readonly creations: KeyedBatcher<sql.CreateRunArgs, sql.CreateRunOut>;

  /**
   * Creation, transitions and the run record run on `database.pool` (hot-sql.ts); the listing and
   * the run context on Prisma. At most `creationsPerOrg` (default 4) creation transactions of one
   * organization are sent to Postgres at once: each locks the organization's row, and a long queue
   * on one row slows every handoff of its lock. The creations that wait meanwhile go together, up
   * to {@link CREATION_BATCH} in one transaction that locks the row once (KeyedBatcher).
   */
  constructor(database: Pick<Database, 'prisma' | 'pool'>, options: { creationsPerOrg?: number } = {}) {
    this.prisma = database.prisma;
    this.pool = database.pool;
    this.creations = new KeyedBatcher(options.creationsPerOrg ?? 4, CREATION_BATCH, (orgId, runs) => this.storeRuns(orgId, runs));
  }

  /**
   * Stores a run (status `pending`) and one step row per executable node in one statement, hence
   * atomically: a run is never visible without its steps. Returns the run id. Creations of the
   * organization that queued in this process meanwhile share its transaction (the constructor).
   */
  async createRun(input: NewRun): Promise<string> {
    return (await this.createRunOnce(input)).id;
  }

  /**
   * {@link createRun}, for a run that may carry an idempotency key: `existing` when the key was
   * used within 24 hours with the same request, and `id` is that run (nothing stored). The same
   * key with another request is a 422 (`idempotency_key_reused`) naming the run it belongs to.
   */
  async createRunOnce(input: NewRun): Promise<{ id: string; existing: boolean }> {
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
    // Sent inside one JSON argument, where undefined would vanish (NOT NULL would then fail in Postgres).
    for (const [what, value] of [['definition', input.definition], ['inputs', input.inputs]] as const) if (value === undefined) throw new RangeError(`${what} must be a JSON value`);
    // The hold and the inserts are one function call (prisma/functions/run-create.sql): the
    // organization row is locked, what is available (balance less what other unfinished runs
    // hold) is read, and the run holds up to its cap of it (docs/money.md, Holds). The refusal
    // reports the available balance that caused it.
    const row = await this.creations.run(input.orgId, {
      user_id: input.userId,
      token_id: input.tokenId,
      workflow_id: input.workflowId ?? null,
      workflow_version_id: input.workflowVersionId ?? null,
      definition: input.definition,
      inputs: input.inputs,
      cap_micros: input.capMicros,
      status,
      require_credit: requireCredit,
      reserved_micros: reservedTotal,
      run_id: input.id ?? null,
      max_duration_seconds: input.maxDurationSeconds ?? null,
      output_cache: input.outputCache ?? null,
      ...(input.nodeEntries ? { node_entries: input.nodeEntries } : {}),
      ...(input.idempotency ? { idempotency_key: input.idempotency.key, request_hash: input.idempotency.requestHash } : {}),
      ...(input.webhook ? { webhook: { url: input.webhook.url, events: input.webhook.events } } : {}),
      ...(input.scheduleId ? { schedule_id: input.scheduleId } : {}),
      steps: input.steps.map((s, i) => ({ node_id: s.nodeId, pending_deps: s.pendingDeps, token: tokens[i]!, reserved_micros: reserved[i]! })),
    });
    if (row.existing) {
      if (!row.same_request) {
        throw new AppError({
          code: 'idempotency_key_reused',
          message: `the Idempotency-Key "${input.idempotency!.key}" was sent in the last 24 hours with a different request (run ${row.id}); send that request unchanged to attach to its run, or use a new key for a new run`,
          details: { runId: row.id },
        });
      }
      return { id: row.id!, existing: true };
    }
    if (row.id !== null) return { id: row.id, existing: false };
    if (row.available_micros === null) throw new AppError({ code: 'not_found', message: `organization ${input.orgId} does not exist` });
    throw insufficientCredit(row.available_micros);
  }

  /**
   * Stores runs of one organization in one transaction (svc_create_runs); when Postgres refuses the
   * batch for anything but being unavailable, each run is sent again alone (sendTogether).
   */
  private storeRuns(orgId: string, runs: sql.CreateRunArgs[]): Promise<PromiseSettledResult<sql.CreateRunOut>[]> {
    return sendTogether(runs, (some) => sql.createRuns(this.pool, { org_id: orgId, runs: some }), (err) => !isDatabaseUnavailable(err));
  }


  /** Deletes the idempotency key of a run (whose start failed before anyone learnt of it), so the request sent again starts a run. */
  async forgetIdempotencyKey(runId: string): Promise<void> {
    if (!isUuid(runId)) return;
    await this.pool.query(`DELETE FROM idempotency_keys WHERE run_id = $1::uuid`, [runId]);
  }

  /** pending → running (sets `started_at`); false when the run was not pending. */
  async markRunning(runId: string): Promise<boolean> {
    if (!isUuid(runId)) return false;
    const { rowCount } = await this.pool.query(`UPDATE runs SET status = 'running', started_at = now() WHERE id = $1::uuid AND status = 'pending'`, [runId]);
    return rowCount === 1;
  }

  /**
   * running → completed with its outputs and `finished_at`. True for exactly one call per run;
   * false when the run is not running (already completed, failed, cancelled, or unknown).
   */
  async completeRun(runId: string, outputs: Record<string, unknown>): Promise<boolean> {
    if (!isUuid(runId)) return false;
    return sql.completeRun(this.pool, { run_id: runId, outputs });
  }

  /**
   * Fails a run for a reason of its own (cap exceeded before a step started, a lost job, ...):
   * pending/running → failed with `error`. Whatever the run's status, every unfinished step is
   * stopped and its reservation released: running attempts become `cancelled` (their late commits
   * are no-ops) and are charged their lost charge (a node that calls out may have been paid for),
   * pending/queued steps `skipped`. Calling it again on a failed run is harmless, and is how a reaper releases a leftover reservation. `nodeId` names
   * the step the run failed on before it started: it becomes `failed` with `error`. With `cancelled`
   * (a cancellation or a deadline) the run's status becomes `cancelled` rather than `failed`.
   */
  async failRun(runId: string, error: RunError, options: { nodeId?: string; cancelled?: boolean } = {}): Promise<FailRunResult> {
    if (!isUuid(runId)) return { failed: false, releasedMicros: 0, cancelled: [], skipped: [] };
    const row = await sql.failRun(this.pool, {
      run_id: runId,
      error: { code: error.code, message: error.message },
      culprit_node_id: options.nodeId ?? null,
      ...(options.cancelled ? { status: 'cancelled' as const } : {}),
    });
    return { failed: row.failed, releasedMicros: row.released_micros, cancelled: row.cancelled, skipped: row.skipped };
  }

  /** What a step executor needs of a run (no steps): null when there is no such run. */
  async getRunContext(runId: string): Promise<RunContextRecord | null> {
    if (!isUuid(runId)) return null;
    const row = await this.prisma.run.findUnique({ where: { id: runId }, select: { orgId: true, status: true, definition: true, inputs: true, outputCache: true, nodeEntries: true, batchId: true } });
    if (!row) return null;
    const nodeEntries = row.nodeEntries !== null && typeof row.nodeEntries === 'object' && !Array.isArray(row.nodeEntries) ? (row.nodeEntries as Record<string, unknown>) : null;
    return { orgId: row.orgId, status: parseRunStatus(row.status, runId), definition: row.definition, inputs: row.inputs, outputCache: outputCacheModeOf(row.outputCache), nodeEntries, batchId: row.batchId };
  }

  /**
   * The run with its steps (ordered by start, unstarted ones last), or null when there is none.
   * With `orgId`, another organization's run is null too: the caller answers 404 either way.
   */
  async getRun(runId: string, orgId?: string): Promise<RunRecord | null> {
    // One statement, one snapshot, no interactive transaction (see run-history.ts).
    return readRunRecord(this.pool, runId, orgId);
  }

  /**
   * Outputs of the completed steps among `nodeIds` (the `${node.port}` sources of a step about to
   * run), by node id. A node that has not completed is absent.
   */
  async stepInputs(runId: string, nodeIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    if (nodeIds.length === 0 || !isUuid(runId)) return found;
    const rows = await sql.queryRows<{ node_id: string; output: Record<string, unknown> | null }>(
      this.pool,
      `SELECT node_id, output FROM steps WHERE run_id = $1::uuid AND node_id = ANY($2::text[]) AND status = 'completed'`,
      [runId, [...nodeIds]],
    );
    for (const row of rows) found.set(row.node_id, row.output ?? {});
    return found;
  }

  /** A page of the organization's runs, newest first (run history; see run-history.ts). */
  async listRuns(orgId: string, options: RunListOptions): Promise<RunListPage> {
    return listRunSummaries(this.prisma, orgId, options);
  }
}
