import { randomUUID } from 'node:crypto';
import type { Logger } from '../platform/logger';
import { microsFromDb } from './micros';
import type { Database } from './database';
import { assertMicros, isUuid } from './run-records';
import * as sql from './hot-sql';
import { KeyedBatcher, sendTogether } from './keyed-batcher';
import { isDatabaseUnavailable } from './store-outage';
import type {
  CompleteStepInput,
  CompleteStepResult,
  FailStepInput,
  FailStepResult,
  ReserveInput,
  ReserveRefusal,
  ReserveResult,
  StepAttempt,
  RetryAttemptInput,
  RetryAttemptResult,
} from './step-transitions';

/** Attempts of a step in all when the caller does not say (the default of `STEP_MAX_ATTEMPTS`). */
const DEFAULT_MAX_ATTEMPTS = 5;

const NOT_COMMITTED: CompleteStepResult = { committed: false, duplicate: false, ready: [], chargedMicros: 0, clamped: false, remaining: -1, runCompleted: false, followerCharges: [] };

/**
 * Settling commits of one organization made in one transaction at most (StepRepository): a batch
 * holds its runs' rows until it commits. A process' interactive runs seldom have more than its
 * WORKER_CONCURRENCY commits waiting; bundled batch rows have hundreds, and with 32 a transaction
 * their settlement was what bounded a batch (docs/performance.md, Batches: 957-1,274 rows/s with
 * 32, 1,488-1,888 with 128, 1,489-1,622 with 256, the same minutes).
 */
export const SETTLEMENT_BATCH = 128;

/**
 * The money-moving step transitions. Each is one call of a Postgres function (the repeatable
 * files `prisma/functions/*.sql`, called through hot-sql.ts on the pool): one round trip, one
 * transaction, taking the run's lock first as prisma/functions/README.md describes (One lock
 * order), so the invariants below hold at every commit:
 *
 * - `0 <= runs.reserved_micros = sum(steps.reserved_micros)`, a step holding money only while `running`;
 * - `runs.spent_micros + runs.reserved_micros <= min(runs.cap_micros, runs.authorized_micros)` (reserve
 *   checks it under the run's lock; settling moves at most the held amount from reserved to spent);
 * - `organizations.held_micros = sum(runs.held_micros + runs.charged_micros - runs.settled_micros)` and
 *   `0 <= organizations.balance_micros` (CHECK): a run's charges come out of the hold it took on the
 *   balance when it was stored, and reach the organization row when it finishes (docs/money.md,
 *   Deferred settlement);
 * - `runs.spent_micros = sum(steps.cost_micros)` and `-sum(run_charge entries of the run)`;
 * - only the attempt holding the step's current token can settle it, and only once.
 */
export class StepRepository {
  private readonly logger: Logger | undefined;
  private readonly pool: sql.SqlPool;
  private readonly settlements: KeyedBatcher<sql.CompleteStepArgs, sql.CompleteStepOut>;

  /**
   * Every transition runs on `database.pool` (hot-sql.ts). A commit that may finish its run
   * (`runOutputs` given, with `orgId`) settles the run on its organization's row: at most
   * `settlementsPerOrg` (default 1) such transactions of one organization are sent at once, and
   * the commits that arrive meanwhile go together, up to {@link SETTLEMENT_BATCH} in one
   * transaction that writes the row once (svc_complete_steps).
   */
  constructor(database: Pick<Database, 'pool'>, options: { logger?: Logger; settlementsPerOrg?: number } = {}) {
    this.pool = database.pool;
    this.logger = options.logger;
    this.settlements = new KeyedBatcher(options.settlementsPerOrg ?? 1, SETTLEMENT_BATCH, (_orgId, commits) =>
      sendTogether(commits, (some) => sql.completeSteps(this.pool, { commits: some }), (err) => !isDatabaseUnavailable(err)),
    );
  }

  /**
   * Starts an attempt: holds `estimateMicros` against the run's cap and makes the caller the step's
   * owner. Refused when the run is not running, the step is not ready (finished, waiting for
   * inputs, or running under a live attempt), the step has had `maxAttempts` attempts, or the
   * cap or the run's hold on the balance has no room. Taking over a step left `running` by a lost
   * attempt first charges that attempt its lost charge and releases the rest of its reservation,
   * unless that attempt recorded its provider job (`recordProviderJob`): the new attempt then
   * resumes the job (`providerJob`) and pays for it once, when it settles.
   */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    assertMicros(input.estimateMicros, 'estimateMicros');
    const lostCharge = input.lostChargeMicros ?? 0;
    assertMicros(lostCharge, 'lostChargeMicros');
    const groupMicros = input.groupMicros ?? 0;
    assertMicros(groupMicros, 'groupMicros');
    if (!isUuid(input.runId)) return { ok: false, reason: 'run_not_running' };
    const staleAfterMs = Math.max(0, Math.floor(input.staleAfterMs ?? 0));
    const token = randomUUID();
    const row = await sql.reserveStep(this.pool, {
      run_id: input.runId,
      node_id: input.nodeId,
      estimate_micros: input.estimateMicros,
      stale_ms: staleAfterMs,
      attempt_token: token,
      lost_charge_micros: lostCharge,
      max_attempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      group_micros: groupMicros,
    });
    if (row.verdict === 'ok' && row.attempt !== null) {
      const resumed = row.provider_job === null ? {} : { providerJob: row.provider_job };
      return { ok: true, attempt: row.attempt, attemptToken: token, groupHeld: row.group_micros !== null, ...resumed };
    }
    const reason = row.verdict as ReserveRefusal;
    if (row.owned && (reason === 'cap_exceeded' || reason === 'insufficient_credit' || reason === 'attempts_exhausted')) return { ok: false, reason, attemptToken: token };
    return { ok: false, reason };
  }

  /**
   * Records the provider job the attempt `attemptToken` submitted (a fal request's URLs, a
   * Replicate prediction's), before it waits on it: a worker that takes the step over resumes it
   * (`reserve`'s `providerJob`) instead of submitting again. False when the attempt no longer
   * owns the step (taken over, or the step settled): the caller's job is then another's to end.
   */
  async recordProviderJob(input: StepAttempt & { job: unknown }): Promise<boolean> {
    if (!isUuid(input.runId)) return false;
    const { rowCount } = await this.pool.query(
      `UPDATE steps SET provider_job = jsonb_build_object('attempt', attempt, 'job', $4::jsonb)
        WHERE run_id = $1 AND node_id = $2 AND attempt_token = $3 AND status = 'running'`,
      [input.runId, input.nodeId, input.attemptToken, JSON.stringify(input.job)],
    );
    return rowCount === 1;
  }

  /**
   * Starts another attempt of a step whose attempt failed transiently (timeout, 429, 5xx), by the
   * same owner: the failed attempt's cost (clamped to its reservation) becomes spending and part of
   * the step's cost, and the next attempt holds `estimateMicros` against the cap. Refused (nothing
   * changes) when the caller no longer owns the step, the run stopped, or the cap has no room for
   * another attempt; the caller then fails the step with the failed attempt's cost. The ledger is
   * charged the step's total once, when the step settles.
   */
  async retryAttempt(input: RetryAttemptInput): Promise<RetryAttemptResult> {
    assertMicros(input.costMicros, 'costMicros');
    assertMicros(input.estimateMicros, 'estimateMicros');
    if (!isUuid(input.runId)) return { ok: false, reason: 'run_not_running' };
    const lostCharge = input.lostChargeMicros ?? 0;
    assertMicros(lostCharge, 'lostChargeMicros');
    const row = await sql.retryStep(this.pool, {
      run_id: input.runId,
      node_id: input.nodeId,
      attempt_token: input.attemptToken,
      cost_micros: input.costMicros,
      estimate_micros: input.estimateMicros,
      lost_charge_micros: lostCharge,
      max_attempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    });
    if (row.verdict !== 'ok' || row.attempt === null) return { ok: false, reason: row.verdict as Exclude<RetryAttemptResult, { ok: true }>['reason'] };
    return { ok: true, attempt: row.attempt };
  }

  /**
   * Commits a finished attempt if it still owns the step: step → completed with its output, cost
   * and duration; the run's reservation becomes spending (cost clamped to the reservation); the
   * org is charged the step's total once (ledger `run_charge`, unique per step); dependents'
   * pending counts drop by one. A stale attempt commits nothing. Repeating a commit with the same
   * token changes nothing and returns `duplicate: true` with the dependents that are ready now, so
   * a worker that lost the first answer can still enqueue them (job ids make that idempotent).
   */
  async completeStep(input: CompleteStepInput): Promise<CompleteStepResult> {
    assertMicros(input.costMicros, 'costMicros');
    if (!isUuid(input.runId)) return NOT_COMMITTED;
    const next = input.next;
    if (next) assertMicros(next.estimateMicros, 'next.estimateMicros');
    const followers = input.followers ?? [];
    for (const f of followers) {
      assertMicros(f.costMicros, 'followers[].costMicros');
      assertMicros(f.estimateMicros, 'followers[].estimateMicros');
    }
    const nextToken = next ? randomUUID() : null;
    const args: sql.CompleteStepArgs = {
      run_id: input.runId,
      node_id: input.nodeId,
      attempt_token: input.attemptToken,
      cost_micros: input.costMicros,
      output: input.output,
      ms: Math.round(input.ms),
      dependents: input.dependents,
      run_outputs: input.runOutputs ?? null,
      next_node_id: next?.nodeId ?? null,
      next_estimate_micros: next ? next.estimateMicros : null,
      next_attempt_token: nextToken,
      followers:
        followers.length === 0
          ? null
          : followers.map((f) => ({ node_id: f.nodeId, cost_micros: f.costMicros, estimate_micros: f.estimateMicros, output: f.output, ms: Math.round(f.ms), dependents: f.dependents, skippable: f.skippable === true })),
      lease: next?.lease ?? false,
    };
    const row = input.runOutputs !== undefined && input.orgId !== undefined ? await this.settlements.run(input.orgId, args) : await sql.completeStep(this.pool, args);
    if (!row.committed) return this.replayedCommit(input);
    const clamped = this.noteClamp(input, row.held_micros);
    const nextReserved = row.next_verdict === 'ok';
    return {
      committed: true,
      duplicate: false,
      ready: (row.ready ?? []).filter((id) => !(nextReserved && id === next?.nodeId)),
      chargedMicros: row.total_micros,
      clamped,
      remaining: row.remaining,
      runCompleted: row.run_completed,
      followerCharges: row.follower_totals ?? [],
      next:
        row.next_verdict === 'ok' && row.next_attempt !== null && nextToken !== null
          ? { ok: true, attempt: row.next_attempt, attemptToken: nextToken, leaseMicros: row.next_lease_micros ?? 0 }
          : row.next_verdict === 'cap_exceeded' || row.next_verdict === 'insufficient_credit'
            ? { ok: false, reason: row.next_verdict }
            : undefined,
    };
  }

  /**
   * Commits a failed attempt if it still owns the step: the attempt's real cost is charged
   * (clamped to its reservation) and the rest released; step → failed with `error`; the run →
   * failed with the same error (only from pending/running); every other pending/queued step →
   * skipped. Other running attempts keep their reservations and settle themselves when they stop.
   */
  async failStep(input: FailStepInput): Promise<FailStepResult> {
    assertMicros(input.costMicros, 'costMicros');
    if (!isUuid(input.runId)) return { committed: false, chargedMicros: 0, clamped: false, runFailed: false, skipped: [] };
    const row = await sql.failStep(this.pool, {
      run_id: input.runId,
      node_id: input.nodeId,
      attempt_token: input.attemptToken,
      cost_micros: input.costMicros,
      error: { code: input.error.code, message: input.error.message },
      ms: input.ms === undefined || input.ms === null ? null : Math.round(input.ms),
    });
    if (!row.committed) return { committed: false, chargedMicros: 0, clamped: false, runFailed: false, skipped: [] };
    const clamped = this.noteClamp(input, row.held_micros);
    return { committed: true, chargedMicros: row.total_micros, clamped, runFailed: row.run_failed, skipped: row.skipped ?? [] };
  }

  /** Reports a cost above the reservation: the pricing estimate of that node is wrong. */
  private noteClamp(input: { runId: string; nodeId: string; costMicros: number }, heldMicros: number): boolean {
    if (input.costMicros <= heldMicros) return false;
    this.logger?.warn({ runId: input.runId, nodeId: input.nodeId, costMicros: input.costMicros, reservedMicros: heldMicros }, 'step cost above its reservation; charged the reservation');
    return true;
  }

  /** A commit that changed nothing: a repeat of this attempt's own commit, or a stale attempt's. */
  private async replayedCommit(input: CompleteStepInput): Promise<CompleteStepResult> {
    if (!isUuid(input.runId)) return NOT_COMMITTED;
    const followers = input.followers ?? [];
    const dependents = [...input.dependents, ...followers.flatMap((f) => f.dependents)];
    const rows = await sql.queryRows<{ cost_micros: string; ready: string[] | null; remaining: number; followers: { node_id: string; cost_micros: number }[] | null }>(
      this.pool,
      `SELECT s.cost_micros,
              (SELECT count(*) FROM steps o WHERE o.run_id = s.run_id AND o.status <> 'completed')::int AS remaining,
              (SELECT array_agg(DISTINCT d.node_id ORDER BY d.node_id) FROM steps d JOIN runs r ON r.id = d.run_id
               WHERE d.run_id = s.run_id AND d.node_id = ANY($4::text[])
                 AND d.pending_deps = 0 AND d.status IN ('pending', 'queued') AND r.status = 'running') AS ready,
              (SELECT json_agg(json_build_object('node_id', f.node_id, 'cost_micros', f.cost_micros)) FROM steps f
               WHERE f.run_id = s.run_id AND f.node_id = ANY($5::text[])
                 AND f.status = 'completed' AND f.attempt_token = s.attempt_token) AS followers
         FROM steps s
        WHERE s.run_id = $1::uuid AND s.node_id = $2::text AND s.status = 'completed' AND s.attempt_token = $3::text`,
      [input.runId, input.nodeId, input.attemptToken, dependents, followers.map((f) => f.nodeId)],
    );
    const row = rows[0];
    if (!row) return NOT_COMMITTED;
    // The followers this token committed, in their order (a run that stopped may have dropped the rest).
    const charged = new Map((row.followers ?? []).map((f) => [f.node_id, microsFromDb(f.cost_micros)]));
    const followerCharges: (number | null)[] = [];
    for (const f of followers) {
      const cost = charged.get(f.nodeId);
      // A skippable follower another attempt had taken was skipped, not the end of what went in.
      if (cost === undefined && f.skippable) followerCharges.push(null);
      else if (cost === undefined) break;
      else followerCharges.push(cost);
    }
    return { committed: true, duplicate: true, ready: row.ready ?? [], chargedMicros: microsFromDb(row.cost_micros), clamped: false, remaining: row.remaining, runCompleted: false, followerCharges };
  }
}
