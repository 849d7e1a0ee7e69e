import { createParser } from 'eventsource-parser';
import { ROUTES, type BatchEvent } from '../../contract';
import { requestOf } from './call';
import { ConnectionError, ServiceError } from './errors';
import { describe, type Transport } from './transport';

/** One event of a batch's progress, with its id (the number of rows ended up to it). */
export type BatchProgressEvent = BatchEvent & { seq: number };

/** How a batch's progress stream is followed, and resumed when its connection drops. */
export interface BatchFollowOptions {
  signal?: AbortSignal;
  /** Resume after this event id (a `seq` seen before); default 0: from the first row. */
  after?: number;
  /** Reconnections tried in a row before giving up (default 5), and the first pause (default 500 ms, doubled each time). */
  maxAttempts?: number;
  initialDelayMs?: number;
}

/**
 * A batch's progress events (`GET /v1/batches/:id/events`) to `batch.ended`: a dropped connection
 * is resumed after the last event seen (Last-Event-ID), so no row is missed and none repeats; a
 * refusal (404, 401) ends it with the service's error.
 */
export async function* followBatchEvents(transport: Transport, id: string, options: BatchFollowOptions = {}): AsyncGenerator<BatchProgressEvent> {
  let last = options.after ?? 0;
  let failures = 0;
  const maxAttempts = options.maxAttempts ?? 5;
  for (;;) {
    let cause: unknown;
    try {
      const request = requestOf(ROUTES['batches.events'], { id }, { headers: { 'last-event-id': String(last) }, ...(options.signal ? { signal: options.signal } : {}) });
      const response = await transport.send(request);
      if (!response.body) throw new Error('the answer has no body');
      for await (const item of readBatchStream(response.body)) {
        failures = 0;
        last = Math.max(last, item.seq);
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
      throw new ConnectionError(`lost the progress stream of batch ${id} (${describe(cause)}); it goes on: follow it again with GET /v1/batches/${id}/events`, cause);
    }
    const base = Math.min(10_000, (options.initialDelayMs ?? 500) * 2 ** failures);
    failures += 1;
    await new Promise((resolve) => setTimeout(resolve, base / 2 + Math.random() * (base / 2)));
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
