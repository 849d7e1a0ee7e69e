import { createParser } from 'eventsource-parser';
import { ROUTES, type Batch, type BatchEvent, type BatchRow, type RouteInput, type RouteOutput } from '../../contract';
import { requestOf, type CallOptions } from './call';
import type { Client } from './client';
import { ConnectionError, ServiceError } from './errors';
import { describe } from './transport';

/** What `createBatch` takes: `batches.create`'s input (docs/batches.md). */
export type BatchInput = RouteInput<'batches.create'>;

/** One event of a batch's progress, with its id (the number of rows ended up to it). */
export type BatchProgressEvent = BatchEvent & { seq: number };

/** How a lost progress stream is resumed. */
export interface BatchFollowOptions {
  signal?: AbortSignal;
  /** Resume after this event id (a `seq` seen before); default 0: from the first row. */
  after?: number;
  /** Reconnections tried in a row before giving up (default 5), and the first pause (default 500 ms, doubled each time). */
  maxAttempts?: number;
  initialDelayMs?: number;
}

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
    let last = options.after ?? 0;
    let failures = 0;
    const maxAttempts = options.maxAttempts ?? 5;
    for (;;) {
      let cause: unknown;
      try {
        const request = requestOf(ROUTES['batches.events'], { id: this.id }, { headers: { 'last-event-id': String(last) }, ...(options.signal ? { signal: options.signal } : {}) });
        const response = await this.client.transport.send(request);
        if (!response.body) throw new Error('the answer has no body');
        for await (const item of readBatchStream(response.body)) {
          failures = 0;
          last = Math.max(last, item.seq);
          if (item.type !== 'batch.row') this.#record = item.batch;
          yield item;
          if (item.type === 'batch.ended') return;
        }
        cause = new Error("the stream ended before the batch's end");
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason ?? err;
        if (err instanceof ServiceError && err.status >= 400 && !err.retryable) throw err;
        cause = err;
      }
      if (failures >= maxAttempts) {
        throw new ConnectionError(`lost the progress stream of batch ${this.id} (${describe(cause)}); it goes on: follow it again with GET /v1/batches/${this.id}/events`, cause);
      }
      const base = Math.min(10_000, (options.initialDelayMs ?? 500) * 2 ** failures);
      failures += 1;
      await new Promise((resolve) => setTimeout(resolve, base / 2 + Math.random() * (base / 2)));
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

/** Reads a batch's `text/event-stream`: `id:` + `data:` per event, then `data: [DONE]`. */
async function* readBatchStream(body: ReadableStream<Uint8Array>): AsyncGenerator<BatchProgressEvent> {
  const pending: BatchProgressEvent[] = [];
  let done = false;
  let malformed: Error | undefined;
  const parser = createParser({
    onEvent(message) {
      if (message.data === '[DONE]') {
        done = true;
        return;
      }
      try {
        pending.push({ ...(JSON.parse(message.data) as BatchEvent), seq: Number(message.id ?? 0) });
      } catch (err) {
        malformed ??= new Error(`the batch's event stream carried a malformed event: ${(err as Error).message}`);
      }
    },
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    while (!done) {
      const { done: ended, value } = await reader.read();
      if (ended) break;
      parser.feed(decoder.decode(value, { stream: true }));
      if (malformed) throw malformed;
      while (pending.length > 0) yield pending.shift()!;
    }
    while (pending.length > 0) yield pending.shift()!;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
