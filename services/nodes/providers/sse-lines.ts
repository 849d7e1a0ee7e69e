import { AppError } from '../../platform/app-error';

/** One server-sent event: its `event:` name (`message` when absent) and its joined `data:` lines. */
export interface SseEvent {
  event: string;
  data: string;
}

/** Longest event we buffer; a provider sending more without a blank line is broken (or hostile). */
const MAX_EVENT_CHARS = 4 * 1024 * 1024;

/**
 * The events of a provider's `text/event-stream` body as they arrive (the SSE format: `event:`
 * and `data:` fields, `:` comments, a blank line ending each event; CRLF, CR and LF line ends).
 *
 * Aborting `signal` cancels the body, which closes the HTTP connection, and rejects with
 * `signal.reason`; a body that breaks otherwise (a reset, the request's timeout) rejects with an
 * `unavailable` AppError naming `provider`, which the step executor treats as transient.
 */
export async function* readSseEvents(body: ReadableStream<Uint8Array>, signal: AbortSignal, provider: string): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const onAbort = (): void => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw new AppError({ code: 'unavailable', message: `${provider} stream broke off: ${(err as Error).message}`, cause: err });
      }
      signal.throwIfAborted();
      buffer += chunk.done ? decoder.decode() + '\n\n' : decoder.decode(chunk.value, { stream: true });
      if (buffer.length > MAX_EVENT_CHARS) throw new AppError({ code: 'unavailable', message: `${provider} sent a stream event over ${MAX_EVENT_CHARS} characters` });
      // Complete lines only; a CR at the very end may be the first half of a CRLF.
      for (let end = findLineEnd(buffer, chunk.done); end !== -1; end = findLineEnd(buffer, chunk.done)) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(buffer[end] === '\r' && buffer[end + 1] === '\n' ? end + 2 : end + 1);
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (chunk.done) return;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Leaving early (an error, or the caller stopped reading) closes the connection.
    void reader.cancel().catch(() => undefined);
  }
}

function findLineEnd(buffer: string, final: boolean): number {
  for (let i = 0; i < buffer.length; i++) {
    const c = buffer[i];
    if (c === '\n') return i;
    if (c === '\r') return i + 1 < buffer.length || final ? i : -1;
  }
  return -1;
}

/** The JSON payload of one stream event; a payload that is not JSON means the provider broke its stream. */
export function parseStreamJson<T>(data: string, provider: string): T {
  try {
    return JSON.parse(data) as T;
  } catch {
    throw new AppError({ code: 'unavailable', message: `${provider} sent a malformed stream event: ${data.slice(0, 100)}` });
  }
}
