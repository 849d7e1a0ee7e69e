import type { Batch, BatchRow, RouteInput, RouteOutput } from '../../contract';
import { followBatchEvents, type BatchFollowOptions, type BatchProgressEvent } from './batch-stream';
import type { CallOptions } from './call';
import type { Client } from './client';
import { ConnectionError } from './errors';

export type { BatchFollowOptions, BatchProgressEvent } from './batch-stream';

/** What `createBatch` takes: `batches.create`'s input (docs/batches.md). */
export type BatchInput = RouteInput<'batches.create'>;

/**
 * Starts a batch: one workflow run once per row of inputs, under one spend cap (`POST /v1/batches`).
 * The batch runs in the background on the service, whatever happens to this process; the handle
 * follows it, reads its rows and its results file.
 *
 * ```ts
 * const batch = await createBatch(client, { workflowRef: 'acme/caption@1', rows, maxCostUsd: 20 });
 * for await (const event of batch.progress()) if (event.type === 'batch.progress') console.log(event.batch.rows);
 * for await (const row of batch.results()) console.log(row.row, row.status, row.outputs);
 * ```
 */
export async function createBatch(client: Client, input: BatchInput, options: CallOptions = {}): Promise<BatchHandle> {
  return new BatchHandle(client, await client.routes['batches.create'](input, options));
}

/** A handle on a batch that exists already (by id): what `createBatch` answers. */
export async function getBatch(client: Client, id: string, options: CallOptions = {}): Promise<BatchHandle> {
  return new BatchHandle(client, await client.routes['batches.get']({ id }, options));
}

/** A batch on the service: its record as last read, its progress, rows and results. */
export class BatchHandle {
  #record: Batch;

  constructor(
    private readonly client: Client,
    record: Batch,
  ) {
    this.#record = record;
  }

  get id(): string {
    return this.#record.id;
  }

  /** The record as last read (by the call that made the handle, `refresh`, or the progress stream). */
  get record(): Batch {
    return this.#record;
  }

  /** Reads the record again. */
  async refresh(options: CallOptions = {}): Promise<Batch> {
    this.#record = await this.client.routes['batches.get']({ id: this.id }, options);
    return this.#record;
  }

  /**
   * The batch's progress events (`GET /v1/batches/:id/events`): `batch.row` per row as it ends,
   * `batch.progress` snapshots, then `batch.ended`, after which the iteration ends. A dropped
   * connection is resumed after the last event seen (Last-Event-ID), so no row is missed and none
   * repeats. Breaking out of the loop stops following; the batch goes on.
   */
  async *progress(options: BatchFollowOptions = {}): AsyncGenerator<BatchProgressEvent> {
    for await (const item of followBatchEvents(this.client.transport, this.id, options)) {
      if (item.type !== 'batch.row') this.#record = item.batch;
      yield item;
    }
  }

  /** Follows the batch to its end; the final record. */
  async wait(options: BatchFollowOptions = {}): Promise<Batch> {
    for await (const event of this.progress(options)) if (event.type === 'batch.ended') return event.batch;
    return this.#record;
  }

  /** Where its results file is (a signed URL, no token needed), and how far it has got. */
  resultsLink(format: 'jsonl' | 'csv' = 'jsonl', options: CallOptions = {}): Promise<RouteOutput<'batches.results'>> {
    return this.client.routes['batches.results']({ id: this.id, format }, options);
  }

  /**
   * The rows ended so far, in row order, each with its status, run, cost, outputs and error (the
   * results file, read as JSON Lines as it downloads). Complete once the batch has ended.
   */
  async *results(options: CallOptions = {}): AsyncGenerator<BatchRow> {
    const link = await this.resultsLink('jsonl', options);
    const response = await fetch(link.url, options.signal ? { signal: options.signal } : {});
    if (!response.ok || !response.body) throw new ConnectionError(`could not download the results of batch ${this.id}: HTTP ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (value) buffered += value;
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          if (line.trim() !== '') yield JSON.parse(line) as BatchRow;
          newline = buffered.indexOf('\n');
        }
        if (done) break;
      }
      if (buffered.trim() !== '') yield JSON.parse(buffered) as BatchRow;
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** Its rows in row order, a page at a time (`status` filters, e.g. the failed ones). */
  rows(input: Omit<RouteInput<'batches.rows'>, 'id'> = {}, options: CallOptions = {}): Promise<RouteOutput<'batches.rows'>> {
    return this.client.routes['batches.rows']({ ...input, id: this.id }, options);
  }

  /** Cancels it: rows not started never start, rows in flight are cancelled. */
  async cancel(options: CallOptions = {}): Promise<Batch> {
    this.#record = await this.client.routes['batches.cancel']({ id: this.id }, options);
    return this.#record;
  }

  /** Runs its failed and cancelled rows again once it has ended (optionally under a new cap). */
  async retry(input: { maxCostUsd?: number } = {}, options: CallOptions = {}): Promise<Batch> {
    this.#record = await this.client.routes['batches.retry']({ ...input, id: this.id }, options);
    return this.#record;
  }
}
