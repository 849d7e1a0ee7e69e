import { randomUUID } from 'node:crypto';
import type { Logger } from '../platform/logger';
import { queryRows, type Db } from './prisma-client';
import { assertMicros, isUuid, jsonParam, micros } from './run-records';
import type {
  CompleteStepInput,
  CompleteStepResult,
  FailStepInput,
  FailStepResult,
  ReserveInput,
  ReserveRefusal,
  ReserveResult,
  RetryAttemptInput,
  RetryAttemptResult,
} from './step-transitions';

/** Attempts of a step in all when the caller does not say (the default of `STEP_MAX_ATTEMPTS`). */
const DEFAULT_MAX_ATTEMPTS = 5;

const NOT_COMMITTED: CompleteStepResult = { committed: false, duplicate: false, ready: [], chargedMicros: 0, clamped: false, remaining: -1, runCompleted: false, followerCharges: [] };

interface VerdictRow {
  out_verdict: 'ok' | ReserveRefusal | 'not_owner' | 'run_not_running';
  out_attempt: number | null;
  /** reserve only: the caller owns the step (a refused takeover of a lost attempt). */
  out_owned?: boolean;
}

interface CompletedRow {
  out_committed: boolean;
  /** The step's total over all its attempts: what the ledger is charged. */
  out_total: bigint | string;
  /** What the attempt held. */
  out_held: bigint | string;
  out_ready: string[] | null;
  out_remaining: number;
  out_run_completed: boolean;
  out_next_verdict: 'ok' | 'cap_exceeded' | 'insufficient_credit' | null;
  out_next_attempt: number | null;
  out_next_lease: bigint | string | null;
  out_follower_totals: (bigint | string)[] | null;
}

interface FailedRow {
  out_committed: boolean;
  out_total: bigint | string;
  out_held: bigint | string;
  out_run_failed: boolean;
  out_skipped: string[] | null;
}

/**
 * The money-moving step transitions. Each is one call of a Postgres function (the repeatable
 * file `prisma/functions/step-transitions.sql`): one round trip, one transaction, taking the run's lock first as
 * run-lock.ts describes, so the invariants below hold at every commit:
 *
 * - `0 <= runs.reserved_micros = sum(steps.reserved_micros)`, a step holding money only while `running`;
 * - `runs.spent_micros + runs.reserved_micros <= min(runs.cap_micros, runs.authorized_micros)` (reserve
 *   checks it under the run's lock; settling moves at most the held amount from reserved to spent);
 * - `organizations.held_micros = sum(runs.held_micros)` and `0 <= organizations.balance_micros` (CHECK):
 *   a run's charges come out of the hold it took on the balance when it was stored (docs/money.md);
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
   * inputs, or running under a live attempt), the step has had `maxAttempts` attempts, or the
   * cap or the run's hold on the balance has no room. Taking over a step left `running` by a lost
   * attempt first charges that attempt its lost charge and releases the rest of its reservation.
   */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    assertMicros(input.estimateMicros, 'estimateMicros');
    const lostCharge = input.lostChargeMicros ?? 0;
    assertMicros(lostCharge, 'lostChargeMicros');
    if (!isUuid(input.runId)) return { ok: false, reason: 'run_not_running' };
    const staleAfterMs = Math.max(0, Math.floor(input.staleAfterMs ?? 0));
    const token = randomUUID();
    const rows = await queryRows<VerdictRow>(
      this.db,
      'SELECT out_verdict, out_attempt, out_owned FROM svc_reserve_step($1::uuid, $2::text, $3::bigint, $4::int, $5::text, $6::bigint, $7::int)',
      [input.runId, input.nodeId, input.estimateMicros, staleAfterMs, token, lostCharge, input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS],
    );
    const row = rows[0]!;
    if (row.out_verdict === 'ok' && row.out_attempt !== null) return { ok: true, attempt: row.out_attempt, attemptToken: token };
    const reason = row.out_verdict as ReserveRefusal;
    if (row.out_owned && (reason === 'cap_exceeded' || reason === 'insufficient_credit' || reason === 'attempts_exhausted')) return { ok: false, reason, attemptToken: token };
    return { ok: false, reason };
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
    const rows = await queryRows<VerdictRow>(this.db, 'SELECT out_verdict, out_attempt FROM svc_retry_step($1::uuid, $2::text, $3::text, $4::bigint, $5::bigint, $6::bigint, $7::int)', [
      input.runId,
      input.nodeId,
      input.attemptToken,
      input.costMicros,
      input.estimateMicros,
      lostCharge,
      input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    ]);
    const row = rows[0]!;
    if (row.out_verdict !== 'ok' || row.out_attempt === null) return { ok: false, reason: row.out_verdict as Exclude<RetryAttemptResult, { ok: true }>['reason'] };
    return { ok: true, attempt: row.out_attempt };
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
    const rows = await queryRows<CompletedRow>(
      this.db,
      `SELECT out_committed, out_total, out_held, out_ready, out_remaining, out_run_completed, out_next_verdict, out_next_attempt, out_next_lease, out_follower_totals
       FROM svc_complete_step($1::uuid, $2::text, $3::text, $4::bigint, $5::jsonb, $6::int, $7::text[], $8::jsonb, $9::text, $10::bigint, $11::text, $12::jsonb, $13::boolean)`,
      [
        input.runId,
        input.nodeId,
        input.attemptToken,
        input.costMicros,
        jsonParam(input.output, 'output'),
        Math.round(input.ms),
        [...input.dependents],
        input.runOutputs === undefined ? null : jsonParam(input.runOutputs, 'runOutputs'),
        next?.nodeId ?? null,
        next ? next.estimateMicros : null,
        nextToken,
        followers.length === 0
          ? null
          : jsonParam(
              followers.map((f) => ({ node: f.nodeId, cost: f.costMicros, estimate: f.estimateMicros, output: f.output, ms: Math.round(f.ms), dependents: f.dependents })),
              'followers',
            ),
        next?.lease ?? false,
      ],
    );
    const row = rows[0]!;
    if (!row.out_committed) return this.replayedCommit(input);
    const clamped = this.noteClamp(input, micros(row.out_held));
    const nextReserved = row.out_next_verdict === 'ok';
    return {
      committed: true,
      duplicate: false,
      ready: (row.out_ready ?? []).filter((id) => !(nextReserved && id === next?.nodeId)),
      chargedMicros: micros(row.out_total),
      clamped,
      remaining: row.out_remaining,
      runCompleted: row.out_run_completed,
      followerCharges: (row.out_follower_totals ?? []).map(micros),
      next:
        row.out_next_verdict === 'ok' && row.out_next_attempt !== null && nextToken !== null
          ? { ok: true, attempt: row.out_next_attempt, attemptToken: nextToken, leaseMicros: micros(row.out_next_lease ?? 0) }
          : row.out_next_verdict === 'cap_exceeded' || row.out_next_verdict === 'insufficient_credit'
            ? { ok: false, reason: row.out_next_verdict }
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
    const errorJson = jsonParam({ code: input.error.code, message: input.error.message }, 'error');
    const ms = input.ms === undefined || input.ms === null ? null : Math.round(input.ms);
    const rows = await queryRows<FailedRow>(
      this.db,
      'SELECT out_committed, out_total, out_held, out_run_failed, out_skipped FROM svc_fail_step($1::uuid, $2::text, $3::text, $4::bigint, $5::jsonb, $6::int)',
      [input.runId, input.nodeId, input.attemptToken, input.costMicros, errorJson, ms],
    );
    const row = rows[0]!;
    if (!row.out_committed) return { committed: false, chargedMicros: 0, clamped: false, runFailed: false, skipped: [] };
    const clamped = this.noteClamp(input, micros(row.out_held));
    return { committed: true, chargedMicros: micros(row.out_total), clamped, runFailed: row.out_run_failed, skipped: row.out_skipped ?? [] };
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
    const rows = await this.db.$queryRaw<{ cost_micros: bigint; ready: string[] | null; remaining: number; followers: { node_id: string; cost_micros: number }[] | null }[]>`
      SELECT s.cost_micros,
             (SELECT count(*) FROM steps o WHERE o.run_id = s.run_id AND o.status <> 'completed')::int AS remaining,
             (SELECT array_agg(DISTINCT d.node_id ORDER BY d.node_id) FROM steps d JOIN runs r ON r.id = d.run_id
              WHERE d.run_id = s.run_id AND d.node_id = ANY(${dependents}::text[])
                AND d.pending_deps = 0 AND d.status IN ('pending', 'queued') AND r.status = 'running') AS ready,
             (SELECT json_agg(json_build_object('node_id', f.node_id, 'cost_micros', f.cost_micros)) FROM steps f
              WHERE f.run_id = s.run_id AND f.node_id = ANY(${followers.map((f) => f.nodeId)}::text[])
                AND f.status = 'completed' AND f.attempt_token = s.attempt_token) AS followers
      FROM steps s
      WHERE s.run_id = ${input.runId}::uuid AND s.node_id = ${input.nodeId} AND s.status = 'completed' AND s.attempt_token = ${input.attemptToken}`;
    const row = rows[0];
    if (!row) return NOT_COMMITTED;
    // The followers this token committed, in their order (a run that stopped may have dropped the rest).
    const charged = new Map((row.followers ?? []).map((f) => [f.node_id, Number(f.cost_micros)]));
    const followerCharges: number[] = [];
    for (const f of followers) {
      const cost = charged.get(f.nodeId);
      if (cost === undefined) break;
      followerCharges.push(cost);
    }
    return { committed: true, duplicate: true, ready: row.ready ?? [], chargedMicros: micros(row.cost_micros), clamped: false, remaining: row.remaining, runCompleted: false, followerCharges };
  }
}
