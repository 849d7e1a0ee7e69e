import { randomBytes } from 'node:crypto';
import { WEBHOOK_SECRET_PREFIX } from '../contract';
import type { Database } from './database';
import { queryRows, type SqlPool } from './hot-sql';
import type { WebhookDeliveryRecord } from './run-records';

/** A run's webhook a dispatcher has claimed: where to, which events, from where on, signed with what. */
export interface ClaimedWebhook {
  runId: string;
  orgId: string;
  url: string;
  events: string[];
  cursorSeq: number;
  secret: string;
}

const newSecret = (): string => `${WEBHOOK_SECRET_PREFIX}${randomBytes(24).toString('base64')}`;

/**
 * Webhooks in Postgres (docs/webhooks.md): organizations' signing secrets, runs' webhooks and
 * their delivery cursors, one row per event delivered. Each method is one statement (or one
 * short transaction), safe to repeat.
 */
export class WebhookRepository {
  private readonly pool: SqlPool;

  constructor(database: Pick<Database, 'pool'>) {
    this.pool = database.pool;
  }

  /** The organization's signing secret, made at its first use. */
  async secret(orgId: string): Promise<string> {
    const [row] = await queryRows<{ secret: string }>(
      this.pool,
      `WITH made AS (INSERT INTO webhook_secrets (org_id, secret) VALUES ($1::uuid, $2) ON CONFLICT (org_id) DO NOTHING RETURNING secret)
       SELECT secret FROM made UNION ALL SELECT secret FROM webhook_secrets WHERE org_id = $1::uuid LIMIT 1`,
      [orgId, newSecret()],
    );
    return row!.secret;
  }

  /** Replaces the organization's secret; deliveries from now on are signed with the new one. */
  async rotateSecret(orgId: string): Promise<string> {
    const [row] = await queryRows<{ secret: string }>(
      this.pool,
      `INSERT INTO webhook_secrets (org_id, secret) VALUES ($1::uuid, $2) ON CONFLICT (org_id) DO UPDATE SET secret = EXCLUDED.secret, created_at = now() RETURNING secret`,
      [orgId, newSecret()],
    );
    return row!.secret;
  }

  /**
   * Claims up to `limit` webhooks that are due and not held (or whose holder's lease lapsed: it
   * died), holding each for `leaseMs`; `FOR UPDATE SKIP LOCKED`, so dispatchers in every worker
   * take different rows. Each comes with its organization's secret (made if it has none yet).
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedWebhook[]> {
    const rows = await queryRows<{ run_id: string; org_id: string; url: string; events: string[]; cursor_seq: number }>(
      this.pool,
      `UPDATE run_webhooks w SET lease_until = now() + make_interval(secs => $2::double precision / 1000)
         FROM (SELECT run_id FROM run_webhooks
                WHERE NOT done AND next_at <= now() AND (lease_until IS NULL OR lease_until < now())
                ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED) due, runs r
        WHERE w.run_id = due.run_id AND r.id = w.run_id
        RETURNING w.run_id, r.org_id, w.url, w.events, w.cursor_seq`,
      [limit, leaseMs],
    );
    const secrets = new Map<string, string>();
    const claimed: ClaimedWebhook[] = [];
    for (const row of rows) {
      if (!secrets.has(row.org_id)) secrets.set(row.org_id, await this.secret(row.org_id));
      claimed.push({ runId: row.run_id, orgId: row.org_id, url: row.url, events: row.events, cursorSeq: row.cursor_seq, secret: secrets.get(row.org_id)! });
    }
    return claimed;
  }

  /** The delivery of event `seq` of a run, if one was tried. */
  async delivery(runId: string, seq: number): Promise<WebhookDeliveryRecord | null> {
    const [row] = await queryRows<DeliveryRow>(this.pool, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE run_id = $1::uuid AND seq = $2`, [runId, seq]);
    return row ? deliveryOf(row) : null;
  }

  /**
   * Records one attempt at delivering event `seq`: `delivered`, or `pending` until `nextAttemptAt`,
   * or `failed` (given up on). The first attempt makes the row.
   */
  async recordAttempt(runId: string, seq: number, eventType: string, outcome: { status: 'delivered' | 'pending' | 'failed'; statusCode: number | null; error: string | null; nextAttemptAt: Date | null }): Promise<void> {
    await this.pool.query(
      `INSERT INTO webhook_deliveries (run_id, seq, event_type, status, attempts, last_status_code, last_error, last_attempt_at, next_attempt_at, delivered_at)
       VALUES ($1::uuid, $2, $3, $4, 1, $5, $6, now(), $7, CASE WHEN $4 = 'delivered' THEN now() END)
       ON CONFLICT (run_id, seq) DO UPDATE SET status = EXCLUDED.status, attempts = webhook_deliveries.attempts + 1, last_status_code = EXCLUDED.last_status_code,
         last_error = EXCLUDED.last_error, last_attempt_at = now(), next_attempt_at = EXCLUDED.next_attempt_at, delivered_at = EXCLUDED.delivered_at`,
      [runId, seq, eventType, outcome.status, outcome.statusCode, outcome.error, outcome.nextAttemptAt],
    );
  }

  /** Moves the run's cursor and lets go of the row: done, or due again at `nextAt`. */
  async release(runId: string, state: { cursorSeq: number; done: boolean; nextAt: Date }): Promise<void> {
    await this.pool.query(`UPDATE run_webhooks SET cursor_seq = GREATEST(cursor_seq, $2), done = $3, next_at = $4, lease_until = NULL WHERE run_id = $1::uuid`, [
      runId,
      state.cursorSeq,
      state.done,
      state.nextAt,
    ]);
  }
}

const DELIVERY_COLUMNS = 'seq, event_type, status, attempts, last_status_code, last_error, first_attempt_at, last_attempt_at, next_attempt_at, delivered_at';

interface DeliveryRow {
  seq: number;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  first_attempt_at: Date;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
}

function deliveryOf(row: DeliveryRow): WebhookDeliveryRecord {
  return {
    seq: row.seq,
    eventType: row.event_type,
    status: row.status as WebhookDeliveryRecord['status'],
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    firstAttemptAt: row.first_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    nextAttemptAt: row.next_attempt_at,
    deliveredAt: row.delivered_at,
  };
}
