import { sseMessages, type SseMessage } from '../../support/sse';

/** A message of a stream and when it arrived (ms since the epoch). */
export interface TimedMessage extends SseMessage {
  at: number;
}

/** What a client read of one event stream, as it arrived: messages, heartbeat comments, the end. */
export interface TimedStream {
  messages: TimedMessage[];
  /** Arrival times of the heartbeat comment lines (`: keep-alive`), which `sseMessages` drops. */
  heartbeats: number[];
  /** Resolves when the stream ends (the server closed it, or the client cut it). */
  done: Promise<void>;
  /** Whether the stream has ended. */
  ended(): boolean;
}

/**
 * Reads a streaming response in the background, timing each message and each heartbeat, so a
 * test can tell a proxy that passes events at once from one that holds them back.
 */
export function readTimed(res: Response): TimedStream {
  const messages: TimedMessage[] = [];
  const heartbeats: number[] = [];
  let over = false;
  async function* counted(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const decoder = new TextDecoder();
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true });
      for (const _ of text.matchAll(/^: keep-alive$/gm)) heartbeats.push(Date.now());
      yield chunk;
    }
  }
  const done = (async () => {
    if (!res.body) return;
    for await (const message of sseMessages(counted(res.body))) messages.push({ ...message, at: Date.now() });
  })()
    .catch(() => undefined)
    .finally(() => (over = true));
  return { messages, heartbeats, done, ended: () => over };
}
