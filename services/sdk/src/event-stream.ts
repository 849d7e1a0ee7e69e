import { createParser } from 'eventsource-parser';
import type { RunEvent, SequencedEvent } from '../../contract';

/** What one read of a run's `text/event-stream` yields. */
export type StreamItem = { kind: 'event'; value: SequencedEvent } | { kind: 'done' } | { kind: 'heartbeat' };

/**
 * Reads a run's event stream: `id: <seq>` + `data: <json>` per event, `: keep-alive` comments,
 * and `data: [DONE]` at the end. Heartbeats are yielded too, so a caller watching for a silent
 * (half-open) connection sees that bytes still arrive. Works on any WHATWG byte stream: Node's
 * fetch and browsers alike.
 */
export async function* readRunStream(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamItem> {
  const pending: StreamItem[] = [];
  let malformed: Error | undefined;
  const parser = createParser({
    onEvent(message) {
      if (message.data === '[DONE]') {
        pending.push({ kind: 'done' });
        return;
      }
      const seq = Number(message.id);
      try {
        const event = JSON.parse(message.data) as RunEvent;
        if (!Number.isInteger(seq) || seq < 1) throw new Error(`event without a valid id (${JSON.stringify(message.id)})`);
        pending.push({ kind: 'event', value: { seq, event } });
      } catch (err) {
        malformed ??= new Error(`the run's event stream carried a malformed event: ${(err as Error).message}`);
      }
    },
    onComment() {
      pending.push({ kind: 'heartbeat' });
    },
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      if (malformed) throw malformed;
      while (pending.length > 0) {
        const item = pending.shift() as StreamItem;
        yield item;
        if (item.kind === 'done') return;
      }
    }
  } finally {
    // Lets go of the connection whether the stream ended, failed or its reader stopped early.
    await reader.cancel().catch(() => undefined);
  }
}
