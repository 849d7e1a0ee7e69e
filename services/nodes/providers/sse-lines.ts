import { createParser } from 'eventsource-parser';
import { AppError } from '../../platform/app-error';
import { expectMediaType, malformedResponse } from './provider-response';

/** One server-sent event: its `event:` name (`message` when absent) and its joined `data:` lines. */
export interface SseEvent {
  event: string;
  data: string;
}

/** Longest event we buffer; a provider sending more without a blank line is broken (or hostile). */
const MAX_EVENT_CHARS = 4 * 1024 * 1024;

/**
 * The events of a provider's `text/event-stream` body as they arrive, parsed by
 * `eventsource-parser` (the one SSE parser of the service, its tests and the SDK). An event the
 * body ends in without its blank line still counts.
 *
 * Aborting `signal` cancels the body, which closes the HTTP connection, and rejects with
 * `signal.reason`; a body that breaks otherwise (a reset, the request's timeout) rejects with an
 * `unavailable` AppError naming `provider`, which the step executor treats as transient, marked
 * `outcomeUnknown`: the call was answered, so the provider may bill it, and it is charged its
 * worst case. An event longer than any provider sends is malformed (`provider-response.ts`).
 */
export async function* readSseEvents(body: ReadableStream<Uint8Array>, signal: AbortSignal, provider: string): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const onAbort = (): void => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  const decoder = new TextDecoder();
  const parsed: SseEvent[] = [];
  let overflow = false;
  const parser = createParser({
    onEvent: (message) => parsed.push({ event: message.event ?? 'message', data: message.data }),
    onError: (err) => {
      if (err.type === 'max-buffer-size-exceeded') overflow = true;
    },
    maxBufferSize: MAX_EVENT_CHARS,
  });
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // The provider answered and was generating: it bills what it generated, which we never
        // learn, so the attempt is charged its worst case (docs/money.md), never nothing.
        throw Object.assign(new AppError({ code: 'unavailable', message: `${provider} stream broke off: ${(err as Error).message}`, cause: err }), { outcomeUnknown: true });
      }
      signal.throwIfAborted();
      parser.feed(chunk.done ? decoder.decode() + '\n\n' : decoder.decode(chunk.value, { stream: true }));
      if (overflow) throw malformedResponse(provider, `a stream event over ${MAX_EVENT_CHARS} characters`);
      yield* parsed.splice(0);
      if (chunk.done) return;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Leaving early (an error, or the caller stopped reading) closes the connection.
    void reader.cancel().catch(() => undefined);
  }
}

/**
 * The body of a streamed answer: a 2xx whose content type is not `text/event-stream` (a gateway's
 * HTML error page, a JSON body) or that has no body is not a stream, and is malformed.
 */
export function eventStreamBody(response: Response, provider: string): ReadableStream<Uint8Array> {
  expectMediaType(response, provider, (type) => type === 'text/event-stream', 'text/event-stream');
  if (!response.body) throw malformedResponse(provider, 'a stream without a body');
  return response.body;
}

/**
 * The JSON object of one stream event. A payload that is not a JSON object means the provider
 * broke its own format (it answered: the call is paid, and not made again as if nothing happened).
 */
export function parseStreamJson<T extends object>(data: string, provider: string): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw malformedResponse(provider, `a stream event that is not JSON: ${data.slice(0, 100)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw malformedResponse(provider, `a stream event that is not a JSON object: ${data.slice(0, 100)}`);
  return parsed as T;
}

/** The message of an error event a provider streamed, fit for our own error message: never our key, at most 500 characters. */
export function streamedErrorMessage(message: string | undefined, apiKey: string): string {
  return (message ?? 'an error without a message').split(apiKey).join('[redacted]').slice(0, 500);
}
