import type { BatchRowStatus, BatchStatus } from '../contract';
import type { Database } from './database';
import { feedBatch, queryRows, type FeedBatchOut } from './hot-sql';
import { claimIdempotencyKey } from './idempotency-claim';
import { microsFromDb } from './micros';
import { isUuid } from './run-records';

/** A batch as its row says (money in micro-USD). */
export interface BatchRecord {
  id: string;
  orgId: string;
  userId: string;
  status: BatchStatus;
  attempt: number;
  workflowRef: string | null;
  workflowId: string | null;
  workflowVersionId: string | null;
  rowCount: number;
  skippedRows: { row: number; field: string | null; message: string }[];
  skippedCount: number;
  capMicros: number;
  rowCapMicros: number;
  spentMicros: number;
  heldMicros: number;
  concurrency: number;
  pendingRows: number;
  runningRows: number;
  completedRows: number;
  failedRows: number;
  cancelledRows: number;
  endedSeq: number;
  /** Rows ended in this attempt (for the rate). */
  endedThisAttempt: number;
  stopReason: { code: string; message: string } | null;
  deadlineAt: Date | null;
  webhookUrl: string | null;
  webhookState: string | null;
  webhookAttempts: number;
  createdAt: Date;
  attemptStartedAt: Date;
  finishedAt: Date | null;
  /** Postgres' clock when the record was read (the rate's "now"). */
  readAt: Date;
}

/** One stored row of a batch. */
export interface BatchRowRecord {
  row: number;
  status: BatchRowStatus;
  runId: string | null;
  attempts: number;
  costMicros: number;
  outputs: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  endedSeq: number | null;
  finishedAt: Date | null;
}

/** What a new batch is stored with. */
export interface NewBatch {
  orgId: string;
  userId: string;
  tokenId: string | null;
  workflowRef: string | null;
  workflowId: string | null;
  workflowVersionId: string | null;
  definition: unknown;
  /**
   * What each row's run is stored with: its steps and node entries, and the index among the steps
   * of a lone local first step that the feed reserves with the run (`first_step`).
   */
  template: { steps: { node_id: string; pending_deps: number; token: null; reserved_micros: 0 }[]; node_entries: Record<string, unknown> | null; first_step?: number };
  /** `firstEstimateMicros`: the worst case of the run's first step with this row's inputs, when the template has a `first_step` (null: its worker reserves it). */
  rows: readonly { row: number; inputs: unknown; firstEstimateMicros?: number | null }[];
  skippedRows: readonly { row: number; field: string | null; message: string }[];
  skippedCount: number;
  capMicros: number;
  rowCapMicros: number;
  concurrency: number;
  outputCache: string | null;
  maxDurationSeconds: number | null;
  webhookUrl: string | null;
  idempotency: { key: string; requestHash: string } | null;
}

export type CreateBatchResult = { id: string; existing: false } | { id: string; existing: true; sameRequest: boolean };

/** Rows inserted per statement when a batch is stored. */
const INSERT_CHUNK = 2_000;

const BATCH_COLUMNS = `id, org_id, user_id, status, attempt, workflow_ref, workflow_id, workflow_version_id, row_count, skipped_rows,
  cap_micros, row_cap_micros, spent_micros, held_micros, concurrency, pending_rows, running_rows, completed_rows, failed_rows,
  cancelled_rows, ended_seq, stop_reason, deadline_at, webhook_url, webhook_state, webhook_attempts, created_at, attempt_started_at,
  finished_at, now() AS read_at, completed_rows + failed_rows + cancelled_rows - ended_before_attempt AS ended_this_attempt`;

interface BatchRow {
  id: string;
  org_id: string;
  user_id: string;
  status: BatchStatus;
  attempt: number;
  workflow_ref: string | null;
  workflow_id: string | null;
  workflow_version_id: string | null;
  row_count: number;
  skipped_rows: { list: BatchRecord['skippedRows']; count: number } | BatchRecord['skippedRows'];
  cap_micros: string;
  row_cap_micros: string;
  spent_micros: string;
  held_micros: string;
  concurrency: number;
  pending_rows: number;
  running_rows: number;
  completed_rows: number;
  failed_rows: number;
  cancelled_rows: number;
  ended_seq: number;
  stop_reason: { code: string; message: string } | null;
  deadline_at: Date | null;
  webhook_url: string | null;
  webhook_state: string | null;
  webhook_attempts: number;
  created_at: Date;
  attempt_started_at: Date;
  finished_at: Date | null;
  read_at: Date;
  ended_this_attempt: number;
}

function toRecord(row: BatchRow): BatchRecord {
  const skipped = Array.isArray(row.skipped_rows) ? { list: row.skipped_rows, count: row.skipped_rows.length } : row.skipped_rows;
  return {
    id: row.id,
    orgId: row.org_id,
    userId: row.user_id,
    status: row.status,
    attempt: row.attempt,
    workflowRef: row.workflow_ref,
    workflowId: row.workflow_id,
    workflowVersionId: row.workflow_version_id,
    rowCount: row.row_count,
    skippedRows: skipped.list,
    skippedCount: skipped.count,
    capMicros: microsFromDb(row.cap_micros),
    rowCapMicros: microsFromDb(row.row_cap_micros),
    spentMicros: microsFromDb(row.spent_micros),
    heldMicros: microsFromDb(row.held_micros),
    concurrency: row.concurrency,
    pendingRows: row.pending_rows,
    runningRows: row.running_rows,
    completedRows: row.completed_rows,
    failedRows: row.failed_rows,
    cancelledRows: row.cancelled_rows,
    endedSeq: row.ended_seq,
    endedThisAttempt: row.ended_this_attempt,
    stopReason: row.stop_reason,
    deadlineAt: row.deadline_at,
    webhookUrl: row.webhook_url,
    webhookState: row.webhook_state,
    webhookAttempts: row.webhook_attempts,
    createdAt: row.created_at,
    attemptStartedAt: row.attempt_started_at,
    finishedAt: row.finished_at,
    readAt: row.read_at,
  };
}

interface StoredRow {
  row: number;
  status: BatchRowStatus;
  run_id: string | null;
  attempts: number;
  cost_micros: string;
  outputs: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  ended_seq: number | null;
  finished_at: Date | null;
}

function toRowRecord(row: StoredRow): BatchRowRecord {
  return {
    row: row.row,
    status: row.status,
    runId: row.run_id,
    attempts: row.attempts,
    costMicros: microsFromDb(row.cost_micros),
    outputs: row.outputs,
    error: row.error,
    endedSeq: row.ended_seq,
    finishedAt: row.finished_at,
  };
}

const ROW_COLUMNS = 'row, status, run_id, attempts, cost_micros, outputs, error, ended_seq, finished_at';

/**
 * Batches in Postgres (docs/batches.md): stored with their rows in one transaction, fed by
 * `svc_feed_batch` (prisma/functions/batch-feed.sql), read for progress, rows and results.
 */
export class BatchRepository {
  constructor(private readonly database: Pick<Database, 'pool'>) {}

  /**
   * Stores a batch and its rows, atomically: nothing of it is visible (nor fed) until every row is
   * in. An unexpired idempotency key (24 hours) answers its batch instead, storing nothing.
   */
  async create(batch: NewBatch): Promise<CreateBatchResult> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const kept = batch.idempotency ? await claimIdempotencyKey(client, 'batches', batch.orgId, batch.idempotency) : null;
      if (kept) {
        await client.query('ROLLBACK');
        return { id: kept.id, existing: true, sameRequest: kept.sameRequest };
      }
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO batches (org_id, user_id, token_id, workflow_ref, workflow_id, workflow_version_id, definition, template, row_count,
                              skipped_rows, cap_micros, row_cap_micros, concurrency, pending_rows, output_cache, deadline_at, webhook_url,
                              idempotency_key, request_hash)
         VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5::uuid, $6::uuid, $7::jsonb, $8::jsonb, $9, $10::jsonb, $11, $12, $13, $9, $14,
                 now() + make_interval(secs => $15::int), $16, $17, $18)
         RETURNING id`,
        [
          batch.orgId,
          batch.userId,
          batch.tokenId,
          batch.workflowRef,
          batch.workflowId,
          batch.workflowVersionId,
          JSON.stringify(batch.definition),
          JSON.stringify(batch.template),
          batch.rows.length,
          JSON.stringify({ list: batch.skippedRows, count: batch.skippedCount }),
          batch.capMicros,
          batch.rowCapMicros,
          batch.concurrency,
          batch.outputCache,
          batch.maxDurationSeconds,
          batch.webhookUrl,
          batch.idempotency?.key ?? null,
          batch.idempotency?.requestHash ?? null,
        ],
      );
      const id = inserted.rows[0]!.id;
      for (let start = 0; start < batch.rows.length; start += INSERT_CHUNK) {
        const chunk = batch.rows.slice(start, start + INSERT_CHUNK).map((r) => ({ row: r.row, inputs: r.inputs, first: r.firstEstimateMicros ?? null }));
        await client.query(
          `INSERT INTO batch_rows (batch_id, row, inputs, first_estimate_micros)
           SELECT $1::uuid, r.row, r.inputs, r.first FROM jsonb_to_recordset($2::jsonb) AS r(row int, inputs jsonb, first bigint)`,
          [id, JSON.stringify(chunk)],
        );
      }
      await client.query('COMMIT');
      return { id, existing: false };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** The batch, when it is the organization's (null for an id that is not a UUID). */
  async get(id: string, orgId: string): Promise<BatchRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await queryRows<BatchRow>(this.database.pool, `SELECT ${BATCH_COLUMNS} FROM batches b WHERE id = $1::uuid AND org_id = $2::uuid`, [id, orgId]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /** What a results file needs of a batch, whoever asks (the download's signed URL stands for its organization): its status and output names. */
  async resultsHead(id: string): Promise<{ status: BatchStatus; outputNames: string[] } | null> {
    const rows = await queryRows<{ status: BatchStatus; names: string[] }>(
      this.database.pool,
      `SELECT status, ARRAY(SELECT n->>'id' FROM jsonb_array_elements(definition->'nodes') n WHERE n->>'uses' = 'output' ORDER BY 1) AS names
       FROM batches WHERE id = $1::uuid`,
      [id],
    );
    return rows[0] ? { status: rows[0].status, outputNames: rows[0].names } : null;
  }

  /** The organization's batches, newest first, after the cursor's (created_at, id). */
  async list(orgId: string, limit: number, after?: { createdAt: Date; id: string }): Promise<BatchRecord[]> {
    const rows = after
      ? await queryRows<BatchRow>(
          this.database.pool,
          `SELECT ${BATCH_COLUMNS} FROM batches b WHERE org_id = $1::uuid AND (created_at, id) < ($2::timestamptz, $3::uuid) ORDER BY created_at DESC, id DESC LIMIT $4`,
          [orgId, after.createdAt, after.id, limit],
        )
      : await queryRows<BatchRow>(this.database.pool, `SELECT ${BATCH_COLUMNS} FROM batches b WHERE org_id = $1::uuid ORDER BY created_at DESC, id DESC LIMIT $2`, [orgId, limit]);
    return rows.map(toRecord);
  }

  /** Rows in row order after `afterRow`, of one status or all. */
  async rows(batchId: string, options: { afterRow: number; limit: number; status?: BatchRowStatus; endedOnly?: boolean }): Promise<BatchRowRecord[]> {
    const filters = ['batch_id = $1::uuid', 'row > $2'];
    const params: unknown[] = [batchId, options.afterRow, options.limit];
    if (options.status) {
      params.push(options.status);
      filters.push(`status = $${params.length}`);
    }
    if (options.endedOnly) filters.push('ended_seq IS NOT NULL');
    const rows = await queryRows<StoredRow>(this.database.pool, `SELECT ${ROW_COLUMNS} FROM batch_rows WHERE ${filters.join(' AND ')} ORDER BY row LIMIT $3`, params);
    return rows.map(toRowRecord);
  }

  /** Rows ended after event `afterSeq`, in the order they ended. */
  async endedAfter(batchId: string, afterSeq: number, limit: number): Promise<BatchRowRecord[]> {
    const rows = await queryRows<StoredRow>(
      this.database.pool,
      `SELECT ${ROW_COLUMNS} FROM batch_rows WHERE batch_id = $1::uuid AND ended_seq > $2 ORDER BY ended_seq LIMIT $3`,
      [batchId, afterSeq, limit],
    );
    return rows.map(toRowRecord);
  }

  /** One turn of the batch (svc_feed_batch). */
  feed(batchId: string, maxStart: number): Promise<FeedBatchOut> {
    return feedBatch(this.database.pool, { batch_id: batchId, max_start: maxStart });
  }

  /** Batches with work to do (running or cancelling), oldest first. */
  async unfinished(limit: number): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.database.pool,
      `SELECT id FROM batches WHERE status = ANY (ARRAY['running', 'cancelling']) ORDER BY created_at LIMIT $1`,
      [limit],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Marks a running batch cancelling (its rows not started never start); answers the runs of its
   * rows in flight, for the caller to cancel. Null: no such batch of the organization.
   */
  async cancel(id: string, orgId: string, reason: { code: string; message: string }): Promise<{ status: BatchStatus; runIds: string[] } | null> {
    const updated = await queryRows<{ status: BatchStatus }>(
      this.database.pool,
      `UPDATE batches SET status = CASE WHEN status = 'running' THEN 'cancelling' ELSE status END,
                          stop_reason = CASE WHEN status = 'running' THEN $3::jsonb ELSE stop_reason END
       WHERE id = $1::uuid AND org_id = $2::uuid RETURNING status`,
      [id, orgId, JSON.stringify(reason)],
    );
    if (!updated[0]) return null;
    if (updated[0].status !== 'cancelling') return { status: updated[0].status, runIds: [] };
    const runs = await queryRows<{ run_id: string }>(this.database.pool, `SELECT run_id FROM batch_rows WHERE batch_id = $1::uuid AND status = 'running'`, [id]);
    return { status: 'cancelling', runIds: runs.map((row) => row.run_id) };
  }

  /**
   * An ended batch's failed and cancelled rows pending again, as its next attempt, with a new cap
   * when given (never below what it spent and holds). Answers what happened: retried, the
   * number of rows; not ended; nothing to retry; the cap too low; no such batch.
   */
  async retry(id: string, orgId: string, capMicros: number | null): Promise<{ outcome: 'retried'; rows: number } | { outcome: 'not_ended' | 'nothing_failed' | 'cap_below_spent' | 'not_found' }> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const found = await client.query<{ status: BatchStatus; spent_micros: string; held_micros: string; failed_rows: number; cancelled_rows: number }>(
        'SELECT status, spent_micros, held_micros, failed_rows, cancelled_rows FROM batches WHERE id = $1::uuid AND org_id = $2::uuid FOR NO KEY UPDATE',
        [id, orgId],
      );
      const batch = found.rows[0];
      const refuse = async (outcome: 'not_ended' | 'nothing_failed' | 'cap_below_spent' | 'not_found') => {
        await client.query('ROLLBACK');
        return { outcome };
      };
      if (!batch) return await refuse('not_found');
      if (batch.status !== 'completed' && batch.status !== 'cancelled') return await refuse('not_ended');
      if (batch.failed_rows + batch.cancelled_rows === 0) return await refuse('nothing_failed');
      if (capMicros !== null && capMicros < microsFromDb(batch.spent_micros) + microsFromDb(batch.held_micros)) return await refuse('cap_below_spent');
      const again = await client.query(
        `UPDATE batch_rows SET status = 'pending', run_id = NULL, outputs = NULL, error = NULL, ended_seq = NULL, finished_at = NULL
         WHERE batch_id = $1::uuid AND status IN ('failed', 'cancelled')`,
        [id],
      );
      await client.query(
        `UPDATE batches SET status = 'running', attempt = attempt + 1, attempt_started_at = now(), finished_at = NULL, stop_reason = NULL,
                            pending_rows = pending_rows + $2, ended_before_attempt = completed_rows, failed_rows = 0, cancelled_rows = 0, cap_micros = COALESCE($3, cap_micros),
                            webhook_state = NULL, webhook_attempts = 0, webhook_next_at = NULL
         WHERE id = $1::uuid`,
        [id, again.rowCount ?? 0, capMicros],
      );
      await client.query('COMMIT');
      return { outcome: 'retried', rows: again.rowCount ?? 0 };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** Batches whose end webhook is due, claimed for `leaseMs` (another worker skips them meanwhile). */
  async claimDueWebhooks(limit: number, leaseMs: number): Promise<BatchRecord[]> {
    const rows = await queryRows<BatchRow>(
      this.database.pool,
      // The CTE's column is not named id: RETURNING's unqualified columns are the batch's.
      `WITH due AS (SELECT id AS due_id FROM batches WHERE webhook_state = 'pending' AND webhook_next_at <= now() ORDER BY webhook_next_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE batches b SET webhook_next_at = now() + make_interval(secs => $2::float8 / 1000), webhook_attempts = webhook_attempts + 1
       FROM due WHERE b.id = due.due_id RETURNING ${BATCH_COLUMNS}`,
      [limit, leaseMs],
    );
    return rows.map(toRecord);
  }

  /** Records a webhook delivery's outcome: delivered, failed for good, or due again at `nextAt`. */
  async webhookOutcome(id: string, outcome: { state: 'delivered' | 'failed' } | { state: 'pending'; nextAt: Date }): Promise<void> {
    await queryRows(this.database.pool, `UPDATE batches SET webhook_state = $2, webhook_next_at = $3 WHERE id = $1::uuid`, [id, outcome.state, outcome.state === 'pending' ? outcome.nextAt : null]);
  }
}
