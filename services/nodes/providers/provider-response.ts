import { AppError } from '../../platform/app-error';

/**
 * Checks of a provider's 2xx answer before a node uses it. An answer that is not what the
 * provider's API promises (another content type, e.g. a gateway's HTML error page; a body or a
 * stream event that is not JSON; a stream that ends without its final event; a body without the
 * fields the node needs) is the provider's fault, never a completion: the step fails with
 * `malformed_provider_response`, naming the provider and what was wrong (docs/runs.md, What a
 * failure costs).
 *
 * The provider answered, so it may bill the call: the error is marked `outcomeUnknown`, which the
 * step executor charges as the step's worst case, unless a node that can price the answer sets
 * `costMicros` on it (an LLM node whose provider reported its usage). It is not retried: calling
 * again would pay again for what is most likely the same broken answer.
 */
export function malformedResponse(provider: string, what: string): AppError {
  return Object.assign(new AppError({ code: 'malformed_provider_response', message: `${provider} sent a malformed answer: ${what}` }), { outcomeUnknown: true });
}

/** The media type of an answer, lower case, without parameters; '' when it has none. */
export function mediaTypeOf(response: Response): string {
  return (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Fails the call as malformed (closing the body) unless the answer's media type is one `accepts` takes. */
export function expectMediaType(response: Response, provider: string, accepts: (type: string) => boolean, expected: string): void {
  const type = mediaTypeOf(response);
  if (accepts(type)) return;
  void response.body?.cancel().catch(() => undefined);
  throw malformedResponse(provider, `${response.status} ${type === '' ? 'without a content type' : `with content type ${type}`} where ${expected} was expected`);
}

const isJson = (type: string): boolean => type === 'application/json' || type.endsWith('+json');

/**
 * Reads a provider response body, failing as malformed once it passes `maxBytes` (the provider
 * sent more than any result we accept) instead of buffering it whole.
 */
export async function readCapped(response: Response, maxBytes: number, provider: string): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw malformedResponse(provider, `${declared} bytes; the limit is ${maxBytes}`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  if (!response.body) return Buffer.alloc(0);
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    total += chunk.length;
    if (total > maxBytes) {
      await response.body.cancel().catch(() => undefined);
      throw malformedResponse(provider, `more than ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** The JSON object of a successful answer (at most `maxBytes`); anything else is malformed. */
export async function jsonBody<T extends object>(response: Response, provider: string, maxBytes = 16 * 1024 * 1024): Promise<T> {
  expectMediaType(response, provider, isJson, 'application/json');
  const text = (await readCapped(response, maxBytes, provider)).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw malformedResponse(provider, 'a body that is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw malformedResponse(provider, 'a JSON body that is not an object');
  return body as T;
}
