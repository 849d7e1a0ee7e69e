import { setTimeout as sleep } from 'node:timers/promises';
import type { BatchEvent } from '../../contract';
import { microsToUsd } from '../../engine';
import type { HeldWhileOpen } from '../events/run-event-stream';
import type { BatchProgressStore } from '../ports';
import { batchView } from './batch-view';

/** One event of a batch's stream: its id is the number of the batch's rows ended up to it. */
export interface SequencedBatchEvent {
  seq: number;
  event: BatchEvent;
}

export interface BatchStreamOptions {
  batchId: string;
  orgId: string;
  /** Resume after this many ended rows (`Last-Event-ID`); 0: from the start. */
  afterSeq: number;
  /** How often Postgres is asked for rows ended since (BATCH_STREAM_POLL_MS). */
  pollMs: number;
  /** The caller went away: the stream ends. */
  signal: AbortSignal;
}

/** Rows read per query; a burst larger than this is read in pages without a pause. */
const PAGE = 500;

/**
 * A batch's progress stream (`GET /v1/batches/:id/events`; docs/batches.md, Following a batch).
 * Its log is Postgres itself: each row ended has its place among the batch's ended rows
 * (`ended_seq`, given as it settles), so the stream replays the rows ended after `Last-Event-ID`
 * and follows the new ones as they settle, a `batch.progress` snapshot after each burst (its id
 * the last row's: a snapshot is state, resumed as state), and `batch.ended` once the batch has
 * ended and every row's event is out. Nothing is lost on a reconnect, and nothing is held in Redis.
 */
export class BatchEventStream implements AsyncIterableIterator<SequencedBatchEvent> {
  private readonly inner: AsyncGenerator<SequencedBatchEvent>;
  private held: HeldWhileOpen | undefined;
  private closed = false;

  constructor(
    private readonly store: BatchProgressStore,
    private readonly options: BatchStreamOptions,
  ) {
    this.inner = this.events();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Gives `slot` back when the stream ends, however it ends. */
  hold(slot: HeldWhileOpen): void {
    if (this.closed) slot.release();
    else this.held = slot;
  }

  async next(): Promise<IteratorResult<SequencedBatchEvent>> {
    try {
      const result = await this.inner.next();
      if (result.done) this.close();
      return result;
    } catch (err) {
      this.close();
      throw err;
    }
  }

  async return(): Promise<IteratorResult<SequencedBatchEvent>> {
    this.close();
    return this.inner.return(undefined);
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.held?.release();
    this.held = undefined;
  }

  private async *events(): AsyncGenerator<SequencedBatchEvent> {
    const { store, options } = this;
    let last = options.afterSeq;
    let shown: string | undefined;
    while (!options.signal.aborted) {
      const rows = await store.endedAfter(options.batchId, last, PAGE);
      for (const row of rows) {
        last = row.endedSeq ?? last;
        yield {
          seq: last,
          event: { type: 'batch.row', row: row.row, status: row.status, runId: row.runId, costUsd: microsToUsd(row.costMicros), error: row.error },
        };
      }
      if (rows.length === PAGE) continue;
      const record = await store.get(options.batchId, options.orgId);
      if (!record) return;
      // Rows that ended between the two reads come with the next read, before the end.
      if (record.endedSeq > last) continue;
      const batch = batchView(record);
      if (record.status === 'completed' || record.status === 'cancelled') {
        yield { seq: last, event: { type: 'batch.ended', batch } };
        return;
      }
      const snapshot = JSON.stringify([batch.status, batch.rows, batch.spentUsd, batch.heldUsd]);
      if (snapshot !== shown) {
        shown = snapshot;
        yield { seq: last, event: { type: 'batch.progress', batch } };
      }
      await sleep(options.pollMs, undefined, { signal: options.signal }).catch(() => undefined);
    }
  }
}
