import type { RunStatus } from '../contract';
import type { Database } from './database';
import { queryRows } from './hot-sql';
import { claimIdempotencyKey } from './idempotency-claim';
import { microsFromDb } from './micros';
import { isUuid } from './run-records';

export type ScheduleState = 'active' | 'paused' | 'deleted';
export type ScheduleTickState = 'starting' | 'started' | 'failed' | 'skipped';

/** Why a schedule is paused, and by whom. */
export interface PauseReason {
  code: string;
  message: string;
  by: 'caller' | 'service';
  at: string;
}

/** A schedule as its row says (money in micro-USD). */
export interface ScheduleRecord {
  id: string;
  orgId: string;
  userId: string;
  name: string | null;
  workflowRef: string;
  inputs: Record<string, unknown>;
  cron: string;
  timezone: string;
  capMicros: number;
  monthlyBudgetMicros: number | null;
  catchUpSeconds: number;
  outputCache: string | null;
  maxDurationSeconds: number | null;
  status: ScheduleState;
  pauseReason: PauseReason | null;
  nextAt: Date | null;
  leaseToken: string | null;
  lastTickAt: Date | null;
  lastRunId: string | null;
  webhookUrl: string | null;
  webhookState: string | null;
  webhookAttempts: number;
  pauseCount: number;
  createdAt: Date;
  updatedAt: Date;
  /** A tick a worker began and did not finish (its run may be stored): finished before any other. */
  startingTick: { tickAt: Date; runId: string } | null;
}

/** One tick (or a run of skipped ticks) with its run's state now. */
export interface ScheduleTickRecord {
  tickAt: Date;
  status: ScheduleTickState;
  runId: string | null;
  runStatus: RunStatus | null;
  costMicros: number | null;
  skippedThrough: Date | null;
  skippedCount: number;
  error: { code: string; message: string } | null;
  recordedAt: Date;
}

export interface NewSchedule {
  orgId: string;
  userId: string;
  name: string | null;
  workflowRef: string;
  inputs: Record<string, unknown>;
  cron: string;
  timezone: string;
  capMicros: number;
  monthlyBudgetMicros: number | null;
  catchUpSeconds: number;
  outputCache: string | null;
  maxDurationSeconds: number | null;
  webhookUrl: string | null;
  /** Its first tick. */
  nextAt: Date;
  idempotency: { key: string; requestHash: string } | null;
}

export type CreateScheduleResult = { id: string; existing: false } | { id: string; existing: true; sameRequest: boolean };

const COLUMNS = `s.id, s.org_id, s.user_id, s.name, s.workflow_ref, s.inputs, s.cron, s.timezone, s.cap_micros, s.monthly_budget_micros,
  s.catch_up_seconds, s.output_cache, s.max_duration_seconds, s.status, s.pause_reason, s.next_at, s.lease_token, s.last_tick_at,
  s.last_run_id, s.webhook_url, s.webhook_state, s.webhook_attempts, s.pause_count, s.created_at, s.updated_at,
  (SELECT json_build_object('tickAt', t.tick_at, 'runId', t.run_id) FROM schedule_ticks t
    WHERE t.schedule_id = s.id AND t.status = 'starting' ORDER BY t.tick_at LIMIT 1) AS starting_tick`;

interface ScheduleRow {
  id: string;
  org_id: string;
  user_id: string;
  name: string | null;
  workflow_ref: string;
  inputs: Record<string, unknown>;
  cron: string;
  timezone: string;
  cap_micros: string;
  monthly_budget_micros: string | null;
  catch_up_seconds: number;
  output_cache: string | null;
  max_duration_seconds: number | null;
  status: ScheduleState;
  pause_reason: PauseReason | null;
  next_at: Date | null;
  lease_token: string | null;
  last_tick_at: Date | null;
  last_run_id: string | null;
  webhook_url: string | null;
  webhook_state: string | null;
  webhook_attempts: number;
  pause_count: number;
  created_at: Date;
  updated_at: Date;
  starting_tick: { tickAt: string; runId: string } | null;
}

function toRecord(row: ScheduleRow): ScheduleRecord {
  return {
    id: row.id,
    orgId: row.org_id,
    userId: row.user_id,
    name: row.name,
    workflowRef: row.workflow_ref,
    inputs: row.inputs,
    cron: row.cron,
    timezone: row.timezone,
    capMicros: microsFromDb(row.cap_micros),
    monthlyBudgetMicros: row.monthly_budget_micros === null ? null : microsFromDb(row.monthly_budget_micros),
    catchUpSeconds: row.catch_up_seconds,
    outputCache: row.output_cache,
    maxDurationSeconds: row.max_duration_seconds,
    status: row.status,
    pauseReason: row.pause_reason,
    nextAt: row.next_at,
    leaseToken: row.lease_token,
    lastTickAt: row.last_tick_at,
    lastRunId: row.last_run_id,
    webhookUrl: row.webhook_url,
    webhookState: row.webhook_state,
    webhookAttempts: row.webhook_attempts,
    pauseCount: row.pause_count,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startingTick: row.starting_tick && { tickAt: new Date(row.starting_tick.tickAt), runId: row.starting_tick.runId },
  };
}

interface TickRow {
  tick_at: Date;
  status: ScheduleTickState;
  run_id: string | null;
  run_status: RunStatus | null;
  spent_micros: string | null;
  skipped_through: Date | null;
  skipped_count: number;
  error: { code: string; message: string } | null;
  created_at: Date;
}

function toTick(row: TickRow): ScheduleTickRecord {
  return {
    tickAt: row.tick_at,
    status: row.status,
    runId: row.run_id,
    runStatus: row.run_status,
    costMicros: row.spent_micros === null ? null : microsFromDb(row.spent_micros),
    skippedThrough: row.skipped_through,
    skippedCount: row.skipped_count,
    error: row.error,
    recordedAt: row.created_at,
  };
}

/**
 * Schedules in Postgres (docs/schedules.md). Their ticks are claimed by the workers with a lease
 * (`claimDue`), and each tick is a row keyed by (schedule, tick time): a tick starts at most one
 * run however many workers look at it, across restarts (its run id is written before the run).
 */
export class ScheduleRepository {
  constructor(private readonly database: Pick<Database, 'pool'>) {}

  /** Stores a schedule; an unexpired idempotency key (24 hours) answers its schedule instead. */
  async create(schedule: NewSchedule): Promise<CreateScheduleResult> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const kept = schedule.idempotency ? await claimIdempotencyKey(client, 'schedules', schedule.orgId, schedule.idempotency) : null;
      if (kept) {
        await client.query('ROLLBACK');
        return { id: kept.id, existing: true, sameRequest: kept.sameRequest };
      }
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO schedules (org_id, user_id, name, workflow_ref, inputs, cron, timezone, cap_micros, monthly_budget_micros, catch_up_seconds,
                                output_cache, max_duration_seconds, webhook_url, next_at, idempotency_key, request_hash)
         VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING id`,
        [
          schedule.orgId,
          schedule.userId,
          schedule.name,
          schedule.workflowRef,
          JSON.stringify(schedule.inputs),
          schedule.cron,
          schedule.timezone,
          schedule.capMicros,
          schedule.monthlyBudgetMicros,
          schedule.catchUpSeconds,
          schedule.outputCache,
          schedule.maxDurationSeconds,
          schedule.webhookUrl,
          schedule.nextAt,
          schedule.idempotency?.key ?? null,
          schedule.idempotency?.requestHash ?? null,
        ],
      );
      await client.query('COMMIT');
      return { id: inserted.rows[0]!.id, existing: false };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** The schedule, when it is the organization's and not deleted (null for an id that is not a UUID). */
  async get(id: string, orgId: string): Promise<ScheduleRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await queryRows<ScheduleRow>(this.database.pool, `SELECT ${COLUMNS} FROM schedules s WHERE s.id = $1::uuid AND s.org_id = $2::uuid AND s.status <> 'deleted'`, [id, orgId]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /** The organization's schedules, newest first, after `after` (the previous page's last). */
  async list(orgId: string, options: { limit: number; after?: { createdAt: Date; id: string }; status?: 'active' | 'paused' }): Promise<ScheduleRecord[]> {
    const rows = await queryRows<ScheduleRow>(
      this.database.pool,
      `SELECT ${COLUMNS} FROM schedules s
        WHERE s.org_id = $1::uuid AND s.status <> 'deleted' AND ($2::text IS NULL OR s.status = $2)
          AND ($3::timestamptz IS NULL OR (s.created_at, s.id) < ($3::timestamptz, $4::uuid))
        ORDER BY s.created_at DESC, s.id DESC LIMIT $5`,
      [orgId, options.status ?? null, options.after?.createdAt ?? null, options.after?.id ?? null, options.limit],
    );
    return rows.map(toRecord);
  }

  /** A schedule's ticks, newest first, older than `before`; each with its run's status and cost now. */
  async ticks(scheduleId: string, options: { limit: number; before?: Date }): Promise<ScheduleTickRecord[]> {
    const rows = await queryRows<TickRow>(
      this.database.pool,
      `SELECT t.tick_at, t.status, t.run_id, r.status AS run_status, r.spent_micros, t.skipped_through, t.skipped_count, t.error, t.created_at
         FROM schedule_ticks t LEFT JOIN runs r ON r.id = t.run_id
        WHERE t.schedule_id = $1::uuid AND ($2::timestamptz IS NULL OR t.tick_at < $2::timestamptz)
        ORDER BY t.tick_at DESC LIMIT $3`,
      [scheduleId, options.before ?? null, options.limit],
    );
    return rows.map(toTick);
  }

  /** The latest `limit` ticks of each schedule, newest first, in one query (a page of schedules is shown with theirs). */
  async latestTicks(scheduleIds: readonly string[], limit: number): Promise<Map<string, ScheduleTickRecord[]>> {
    const rows = await queryRows<TickRow & { schedule_id: string }>(
      this.database.pool,
      `SELECT s.id AS schedule_id, t.tick_at, t.status, t.run_id, r.status AS run_status, r.spent_micros, t.skipped_through, t.skipped_count, t.error, t.created_at
         FROM unnest($1::uuid[]) AS s(id)
         CROSS JOIN LATERAL (SELECT * FROM schedule_ticks t WHERE t.schedule_id = s.id ORDER BY t.tick_at DESC LIMIT $2) t
         LEFT JOIN runs r ON r.id = t.run_id
        ORDER BY s.id, t.tick_at DESC`,
      [scheduleIds, limit],
    );
    const byId = new Map<string, ScheduleTickRecord[]>(scheduleIds.map((id) => [id, []]));
    for (const row of rows) byId.get(row.schedule_id)!.push(toTick(row));
    return byId;
  }

  /** What the schedule's runs stored since `since` spend: the cost of those ended, the cap of those in flight. */
  async spentSince(scheduleId: string, since: Date): Promise<number> {
    return (await this.spentSinceEach([{ scheduleId, since }])).get(scheduleId)!;
  }

  /** {@link spentSince} of several schedules, each from its own moment (its month in its time zone), in one query. */
  async spentSinceEach(periods: readonly { scheduleId: string; since: Date }[]): Promise<Map<string, number>> {
    const rows = await queryRows<{ id: string; spent: string }>(
      this.database.pool,
      `SELECT p.id, COALESCE(SUM(CASE WHEN r.status IN ('completed', 'failed', 'cancelled') THEN r.spent_micros ELSE GREATEST(r.cap_micros, r.spent_micros) END), 0)::text AS spent
         FROM unnest($1::uuid[], $2::timestamptz[]) AS p(id, since)
         LEFT JOIN runs r ON r.schedule_id = p.id AND r.created_at >= p.since
        GROUP BY p.id`,
      [periods.map((p) => p.scheduleId), periods.map((p) => p.since)],
    );
    return new Map(rows.map((row) => [row.id, microsFromDb(row.spent)]));
  }

  /** Pauses an active schedule (by a caller): no tick until resumed. False when there is no such active schedule. */
  async pause(id: string, orgId: string, reason: PauseReason): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await queryRows(
      this.database.pool,
      `UPDATE schedules SET status = 'paused', pause_reason = $3::jsonb, next_at = NULL, updated_at = now()
        WHERE id = $1::uuid AND org_id = $2::uuid AND status = 'active' RETURNING id`,
      [id, orgId, JSON.stringify(reason)],
    );
    return rows.length > 0;
  }

  /** Makes a paused schedule active again from `nextAt` (the ticks while paused are not run). False when there is no such paused schedule. */
  async resume(id: string, orgId: string, nextAt: Date): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await queryRows(
      this.database.pool,
      `UPDATE schedules SET status = 'active', pause_reason = NULL, next_at = $3, updated_at = now()
        WHERE id = $1::uuid AND org_id = $2::uuid AND status = 'paused' RETURNING id`,
      [id, orgId, nextAt],
    );
    return rows.length > 0;
  }

  /** Marks it deleted: it never ticks again, and its runs keep its id. */
  async delete(id: string, orgId: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    const rows = await queryRows(
      this.database.pool,
      `UPDATE schedules SET status = 'deleted', deleted_at = now(), next_at = NULL, webhook_state = CASE WHEN webhook_state = 'pending' THEN NULL ELSE webhook_state END, updated_at = now()
        WHERE id = $1::uuid AND org_id = $2::uuid AND status <> 'deleted' RETURNING id`,
      [id, orgId],
    );
    return rows.length > 0;
  }

  /**
   * Leases up to `limit` active schedules whose next tick is due at `now`, and paused ones with a
   * tick left half begun (to finish it), to this caller for `leaseMs` (a lapsed lease is taken
   * over): the one worker that handles each tick.
   */
  async claimDue(now: Date, limit: number, leaseMs: number): Promise<ScheduleRecord[]> {
    const rows = await queryRows<ScheduleRow>(
      this.database.pool,
      `WITH active AS (
         SELECT id FROM schedules
          WHERE status = 'active' AND next_at <= $1::timestamptz AND (lease_until IS NULL OR lease_until < $1::timestamptz)
          ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       -- A paused schedule's tick left half begun: finished, nothing more.
       paused AS (
         SELECT id FROM schedules
          WHERE status = 'paused' AND (lease_until IS NULL OR lease_until < $1::timestamptz)
            AND id IN (SELECT t.schedule_id FROM schedule_ticks t WHERE t.status = 'starting')
          LIMIT $2 FOR UPDATE SKIP LOCKED),
       due AS (SELECT id FROM active UNION SELECT id FROM paused)
       UPDATE schedules s SET lease_token = gen_random_uuid(), lease_until = $1::timestamptz + make_interval(secs => $3::float8 / 1000)
         FROM due WHERE s.id = due.id RETURNING ${COLUMNS}`,
      [now, limit, leaseMs],
    );
    return rows.map(toRecord);
  }

  /**
   * Records that a tick starts run `runId` before the run is stored, once: answers the run id
   * the tick has (another's, when it was recorded before) and its status.
   */
  async openTick(scheduleId: string, tickAt: Date, runId: string): Promise<{ runId: string; status: ScheduleTickState }> {
    const [row] = await queryRows<{ run_id: string; status: ScheduleTickState }>(
      this.database.pool,
      `WITH opened AS (
         INSERT INTO schedule_ticks (schedule_id, tick_at, status, run_id) VALUES ($1::uuid, $2::timestamptz, 'starting', $3::uuid)
         ON CONFLICT (schedule_id, tick_at) DO NOTHING RETURNING run_id, status)
       SELECT run_id, status FROM opened
       UNION ALL SELECT run_id, status FROM schedule_ticks WHERE schedule_id = $1::uuid AND tick_at = $2::timestamptz AND NOT EXISTS (SELECT 1 FROM opened)`,
      [scheduleId, tickAt, runId],
    );
    return { runId: row!.run_id, status: row!.status };
  }

  /** How a started tick ended: its run stored, or refused (`error`). */
  async closeTick(scheduleId: string, tickAt: Date, outcome: { status: 'started' } | { status: 'failed'; error: { code: string; message: string } }): Promise<void> {
    await queryRows(
      this.database.pool,
      `UPDATE schedule_ticks SET status = $3, error = $4::jsonb, run_id = CASE WHEN $3 = 'started' THEN run_id END
        WHERE schedule_id = $1::uuid AND tick_at = $2::timestamptz AND status = 'starting'`,
      [scheduleId, tickAt, outcome.status, outcome.status === 'failed' ? JSON.stringify(outcome.error) : null],
    );
  }

  /** Records ticks skipped together (missed, or over the budget), once. */
  async recordSkipped(scheduleId: string, first: Date, last: Date, count: number, error: { code: string; message: string }): Promise<void> {
    await queryRows(
      this.database.pool,
      `INSERT INTO schedule_ticks (schedule_id, tick_at, status, skipped_through, skipped_count, error)
       VALUES ($1::uuid, $2::timestamptz, 'skipped', $3::timestamptz, $4, $5::jsonb) ON CONFLICT (schedule_id, tick_at) DO NOTHING`,
      [scheduleId, first, last, count, JSON.stringify(error)],
    );
  }

  /** Whether the run exists (a tick's run stored before its worker stopped). */
  async runExists(runId: string): Promise<boolean> {
    return (await queryRows(this.database.pool, 'SELECT 1 FROM runs WHERE id = $1::uuid', [runId])).length > 0;
  }

  /**
   * Ends a lease: the schedule's next tick is `nextAt` (left null if it was paused meanwhile).
   * False when the lease was lost (lapsed and taken): nothing is written.
   */
  async advance(id: string, leaseToken: string, tick: { nextAt: Date | null; lastTickAt: Date; lastRunId: string | null }): Promise<boolean> {
    const rows = await queryRows(
      this.database.pool,
      `UPDATE schedules SET next_at = CASE WHEN status = 'active' THEN $3::timestamptz END, lease_token = NULL, lease_until = NULL,
              last_tick_at = $4::timestamptz, last_run_id = COALESCE($5::uuid, last_run_id)
        WHERE id = $1::uuid AND lease_token = $2::uuid RETURNING id`,
      [id, leaseToken, tick.nextAt, tick.lastTickAt, tick.lastRunId],
    );
    return rows.length > 0;
  }

  /** Pauses it by the service (its workflow is gone, its organization has no credit): with its webhook due. */
  async pauseItself(id: string, leaseToken: string, reason: PauseReason): Promise<boolean> {
    const rows = await queryRows(
      this.database.pool,
      `UPDATE schedules SET status = 'paused', pause_reason = $3::jsonb, next_at = NULL, lease_token = NULL, lease_until = NULL, updated_at = now(),
              pause_count = pause_count + 1, webhook_attempts = 0,
              webhook_state = CASE WHEN webhook_url IS NULL THEN webhook_state ELSE 'pending' END,
              webhook_next_at = CASE WHEN webhook_url IS NULL THEN webhook_next_at ELSE now() END
        WHERE id = $1::uuid AND lease_token = $2::uuid AND status = 'active' RETURNING id`,
      [id, leaseToken, JSON.stringify(reason)],
    );
    return rows.length > 0;
  }

  /** Leases pause webhooks due for delivery. */
  async claimDueWebhooks(limit: number, leaseMs: number): Promise<ScheduleRecord[]> {
    const rows = await queryRows<ScheduleRow>(
      this.database.pool,
      `WITH due AS (SELECT id FROM schedules WHERE webhook_state = 'pending' AND webhook_next_at <= now() ORDER BY webhook_next_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE schedules s SET webhook_next_at = now() + make_interval(secs => $2::float8 / 1000), webhook_attempts = webhook_attempts + 1
         FROM due WHERE s.id = due.id RETURNING ${COLUMNS}`,
      [limit, leaseMs],
    );
    return rows.map(toRecord);
  }

  /** Shortens this caller's lease on a schedule whose tick failed to `until`, for a worker to try again then. */
  async retryAt(id: string, leaseToken: string, until: Date): Promise<void> {
    await queryRows(this.database.pool, `UPDATE schedules SET lease_until = $3::timestamptz WHERE id = $1::uuid AND lease_token = $2::uuid`, [id, leaseToken, until]);
  }

  /** Records a pause webhook delivery's outcome: delivered, failed for good, or due again at `nextAt`. */
  async webhookOutcome(id: string, outcome: { state: 'delivered' | 'failed' } | { state: 'pending'; nextAt: Date }): Promise<void> {
    await queryRows(this.database.pool, `UPDATE schedules SET webhook_state = $2, webhook_next_at = $3 WHERE id = $1::uuid AND webhook_state = 'pending'`, [
      id,
      outcome.state,
      outcome.state === 'pending' ? outcome.nextAt : null,
    ]);
  }
}
