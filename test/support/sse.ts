/**
 * A small `text/event-stream` reader for tests: enough of the SSE format for our streams
 * (`id:` and `data:` fields, comment lines as heartbeats, a blank line ending each message).
 */

/** One message of a stream. `id` is the message's own `id:` field (undefined when it has none). */
export interface SseMessage {
  id: string | undefined;
  data: string;
}

/** Parses complete SSE text into its messages; heartbeat comments are dropped. */
export function parseSse(text: string): SseMessage[] {
  const messages: SseMessage[] = [];
  let id: string | undefined;
  let data: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length > 0) messages.push({ id, data: data.join('\n') });
      id = undefined;
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  return messages;
}

/**
 * The messages of a streaming response as they arrive (a `fetch` Response's body, or any
 * stream of bytes). A message is yielded once its terminating blank line has arrived.
 */
export async function* sseMessages(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    // Line ends normalized to \n (our server sends \n only; a CR split from its LF is not handled).
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
    // Everything up to the last blank line is made of complete messages.
    const end = buffer.lastIndexOf('\n\n');
    if (end === -1) continue;
    const complete = buffer.slice(0, end + 2);
    buffer = buffer.slice(end + 2);
    yield* parseSse(complete);
  }
  buffer += decoder.decode();
  if (buffer.trim() !== '') yield* parseSse(`${buffer}\n\n`);
}

/** Every message of a `fetch` response, read to the end of the stream. */
export async function readSse(res: Response): Promise<SseMessage[]> {
  if (!res.body) return [];
  const messages: SseMessage[] = [];
  for await (const message of sseMessages(res.body)) messages.push(message);
  return messages;
}
