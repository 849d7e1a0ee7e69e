import { createParser } from 'eventsource-parser';

/**
 * Reading our own `text/event-stream` answers in tests, with `eventsource-parser` (the one SSE
 * parser of the service: provider streams are read with it too).
 */

/** One message of a stream. `id` is the message's own `id:` field (undefined when it has none). */
export interface SseMessage {
  id: string | undefined;
  data: string;
}

/** Parses a whole SSE text into its messages (one it ends in without a blank line counts too). */
export function parseSse(text: string): SseMessage[] {
  const messages: SseMessage[] = [];
  createParser({ onEvent: ({ id, data }) => messages.push({ id, data }) }).feed(`${text}\n\n`);
  return messages;
}

/**
 * The messages of a streaming response as they arrive (a `fetch` Response's body, or any
 * stream of bytes). A message is yielded once its terminating blank line has arrived; one the
 * stream ends in without it still counts. Heartbeat comments are dropped.
 */
export async function* sseMessages(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  const parsed: SseMessage[] = [];
  const parser = createParser({ onEvent: ({ id, data }) => parsed.push({ id, data }) });
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    yield* parsed.splice(0);
  }
  parser.feed(`${decoder.decode()}\n\n`);
  yield* parsed;
}

/** Every message of a `fetch` response, read to the end of the stream. */
export async function readSse(res: Response): Promise<SseMessage[]> {
  if (!res.body) return [];
  const messages: SseMessage[] = [];
  for await (const message of sseMessages(res.body)) messages.push(message);
  return messages;
}
