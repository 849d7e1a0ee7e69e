import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request as undiciRequest } from 'undici';
import { AppError } from '../../platform/app-error';
import { providerCalls, type ProviderCall } from '../../platform/call-channels';
import { attachPermit, providerScope } from './provider-scope';
import { annotateSpan, inSpan, SpanKind, SPAN_ATTRIBUTES } from '../../platform/tracing';
import { retryAfterMs } from './rate-headers';

/**
 * The one HTTP client of hosted providers (LLM, image, speech, embedding APIs): every provider
 * node calls `providerFetch`, so timeouts, retries, cancellation and error mapping are the same
 * everywhere and tested once.
 *
 * - The run's AbortSignal reaches the request: an aborted step stops the HTTP call at once.
 * - Inside a step, each try first waits for its turn under the provider's shared limits, and
 *   every answer's status and rate headers are told to them (`ProviderScope`): a 429 slows the
 *   whole fleet for the provider, not only this call.
 * - A request that takes longer than `timeoutMs` (headers and body) fails as `unavailable`.
 * - 429, 5xx (except 501) and network errors are retried, `PROVIDER_HTTP_TRIES` tries in all
 *   unless the caller asks fewer, with exponential backoff and jitter, waiting at least what
 *   `Retry-After` asks (capped at `maxRetryAfterMs`); but a request that is not a GET is retried
 *   after a network error only when it cannot have reached the provider (the connection was
 *   never made): one that timed out or broke after it was sent may have been carried out and
 *   billed, so it fails at once marked `outcomeUnknown`, and the step executor charges that
 *   attempt its worst case before it tries another.
 * - This client is the one layer that repeats a request the provider answered with an error
 *   status, or that never reached it: such a final failure is marked `httpFinal`, and the step
 *   executor does not run another attempt for it. So a provider answering a permanent 5xx is
 *   called `PROVIDER_HTTP_TRIES` times per step, not that many per attempt (docs/runs.md).
 * - A final failure becomes an `AppError` whose message names the provider and its own message,
 *   never our key: 400/404/422 → `bad_request` (the provider refused the input), 401/403 →
 *   `unavailable` (our key is wrong or lacks access: a configuration problem, said so),
 *   429 → `rate_limited`, 5xx/timeout/network → `unavailable`. `rate_limited` and `unavailable`
 *   are transient for the step executor, which may run another attempt of the step.
 */
export interface ProviderRequest {
  /** Named in error messages, e.g. `openai`; its limits are this name's (docs/providers.md, Provider limits). */
  provider: string;
  /** The model the request is for: a limit stated for `provider/model` applies too. */
  model?: string;
  /** Tokens the request may use at worst (an LLM call), drawn from a tokens-per-minute limit; the node reports the answer's usage with `reportTokenUsage`. */
  tokens?: number;
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  /** A JSON body (serialized here) or raw bytes. */
  json?: unknown;
  body?: Uint8Array | string;
  signal: AbortSignal;
  timeoutMs: number;
  /** Retries after the first try (default `PROVIDER_HTTP_TRIES` - 1, and never more). */
  retries?: number;
  /** First backoff (default 500 ms), doubled per retry. */
  baseDelayMs?: number;
  /** Longest wait a `Retry-After` may ask for (default 20 s); asking more fails the call instead. */
  maxRetryAfterMs?: number;
}

/** Secrets that must never appear in an error message (keys, bearer values). */
function redact(text: string, headers: Record<string, string> | undefined): string {
  let out = text;
  for (const value of Object.values(headers ?? {})) {
    for (const part of value.split(/\s+/)) if (part.length >= 12) out = out.split(part).join('[redacted]');
  }
  return out.slice(0, 500);
}

/** The provider's own error message from a JSON error body (OpenAI, Anthropic, fal and Replicate shapes), else the text. */
export function providerMessage(text: string): string {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const error = body.error as Record<string, unknown> | string | undefined;
    if (typeof error === 'string') return error;
    if (error && typeof error.message === 'string') return error.message;
    for (const key of ['detail', 'message', 'title']) if (typeof body[key] === 'string') return body[key] as string;
  } catch {
    // not JSON
  }
  return text.trim() || 'no details';
}

function failure(provider: string, status: number, message: string, location?: string | null): AppError {
  if (status >= 300 && status < 400) {
    // Not followed (`send`): a moved API is the operator's to point at, not ours to chase with the key.
    return new AppError({ code: 'unavailable', message: `${provider} answered a redirect (${status})${location ? ` to ${location.slice(0, 200)}` : ''}; provider calls do not follow redirects: the operator must set its base URL to where it points` });
  }
  if (status === 429) return new AppError({ code: 'rate_limited', message: `${provider} is rate limiting us (429): ${message}` });
  if (status === 401 || status === 403) return new AppError({ code: 'unavailable', message: `${provider} refused the service's credentials (${status}); the operator must check its API key: ${message}` });
  if (status >= 500) return new AppError({ code: 'unavailable', message: `${provider} failed (${status}): ${message}` });
  return new AppError({ code: 'bad_request', message: `${provider} refused the request (${status}): ${message}` });
}

const isRetryableStatus = (status: number) => status === 429 || (status >= 500 && status !== 501);

/**
 * Tries of one request in all, the first included: the bound on how often one provider that
 * answers a permanent 5xx (or 429) is called per step, since the step executor does not repeat
 * a failure this client has already retried (`httpFinal`).
 */
export const PROVIDER_HTTP_TRIES = 3;

/** A failure this client retried as often as it may (or that a retry cannot cure): final for the step. */
const final = (err: AppError): AppError => Object.assign(err, { httpFinal: true });

/** Socket errors of a connection that was never made: the request cannot have reached the provider. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** The code of a failed request: undici's own, or the socket error it carries in `cause`. */
function networkCode(err: unknown): string | undefined {
  const failed = err as { code?: unknown; cause?: { code?: unknown } } | null;
  if (typeof failed?.cause?.code === 'string') return failed.cause.code;
  return typeof failed?.code === 'string' ? failed.code : undefined;
}

/**
 * One connection pool for every provider call of the process: keep-alive, no cap on connections
 * (the shared provider limits cap calls), and no timeouts of its own (each request's
 * `timeoutMs` governs, however long a provider may take).
 */
const providerAgent = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

/**
 * One HTTP exchange with undici's `request`, not `fetch`: a call waiting on its answer holds
 * about 17 KB less and sending it costs about a quarter of the CPU (no WHATWG request, streams or
 * body tee while it waits; docs/performance.md, B11). The answer is handed on as a `Response`
 * over the socket's body stream. Redirects are not followed: our key is not sent on to another
 * address, and a provider's API does not redirect.
 */
async function send(url: string, init: { method: string; headers: Record<string, string>; body: Uint8Array | string | undefined; signal: AbortSignal }): Promise<Response> {
  const answer = await undiciRequest(url, { ...init, dispatcher: providerAgent });
  const { statusCode } = answer;
  if (statusCode < 200 || statusCode > 599) {
    answer.body.destroy();
    throw new Error(`an invalid HTTP status ${statusCode}`);
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one);
    else if (value !== undefined) headers.append(name, value);
  }
  const bodiless = statusCode === 204 || statusCode === 205 || statusCode === 304;
  if (bodiless) answer.body.destroy();
  return new Response(bodiless ? null : (answer.body as unknown as ReadableStream<Uint8Array>), { status: statusCode, headers });
}

function neverSent(err: unknown): boolean {
  return NEVER_SENT.has(networkCode(err) ?? '');
}

function networkErrorText(err: unknown): string {
  const code = networkCode(err);
  return code ? `${(err as Error).message}: ${code}` : (err as Error).message;
}

/**
 * Sends the request; resolves with the response of the first try that is not retryable (2xx,
 * or a 4xx the caller may read), rejects with an `AppError` otherwise, or with `signal.reason`
 * when the run aborts. The caller reads the body (or streams it) under the same signal.
 */
export function providerFetch(request: ProviderRequest): Promise<Response> {
  const attributes = { [SPAN_ATTRIBUTES.provider]: request.provider, 'http.request.method': request.method ?? (request.json === undefined && request.body === undefined ? 'GET' : 'POST'), 'server.address': URL.parse(request.url)?.host ?? '' };
  return inSpan('provider.request', { kind: SpanKind.CLIENT, attributes }, () => sendWithRetries(request));
}

async function sendWithRetries(request: ProviderRequest): Promise<Response> {
  const retries = Math.min(request.retries ?? PROVIDER_HTTP_TRIES - 1, PROVIDER_HTTP_TRIES - 1);
  const baseDelay = request.baseDelayMs ?? 500;
  const maxRetryAfter = request.maxRetryAfterMs ?? 20_000;
  const headers = { ...(request.json === undefined ? {} : { 'content-type': 'application/json' }), ...request.headers };
  const body = request.json === undefined ? request.body : JSON.stringify(request.json);
  const method = request.method ?? (body === undefined ? 'GET' : 'POST');
  const scope = providerScope();
  const limited = { provider: request.provider, model: request.model };
  for (let attempt = 0; ; attempt++) {
    request.signal.throwIfAborted();
    // Waiting for the turn is not the provider's time: the timeout and the timing start after it.
    const permit = scope ? await scope.beforeRequest({ ...limited, tokens: request.tokens ?? 0, signal: request.signal }) : undefined;
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const signal = AbortSignal.any([request.signal, timeout]);
    let response: Response;
    const started = performance.now();
    const tried = (outcome: string) => {
      if (providerCalls.hasSubscribers) providerCalls.publish({ provider: request.provider, outcome, seconds: (performance.now() - started) / 1000 } satisfies ProviderCall);
    };
    try {
      response = await send(request.url, { method, headers, body, signal });
    } catch (err) {
      // Whether it used tokens is unknown: its worst case stays counted.
      permit?.done();
      tried(request.signal.aborted ? 'aborted' : timeout.aborted ? 'timeout' : 'network_error');
      if (request.signal.aborted) throw request.signal.reason;
      const reason = timeout.aborted ? `no answer within ${request.timeoutMs} ms` : `network error (${networkErrorText(err)})`;
      // A request that timed out or broke once sent may have been carried out (and billed).
      const outcomeUnknown = method !== 'GET' && (timeout.aborted || !neverSent(err));
      if (attempt < retries && !outcomeUnknown) {
        await sleep(baseDelay * 2 ** attempt * (0.75 + Math.random() * 0.5), undefined, { signal: request.signal });
        continue;
      }
      const failed = new AppError({ code: 'unavailable', message: `${request.provider} could not be reached: ${reason}` });
      // Sent and broken (its outcome unknown): the step may try again, paying for this one; else tried enough.
      throw outcomeUnknown ? Object.assign(failed, { outcomeUnknown }) : final(failed);
    }
    // Timed to the response's headers: a streamed body is read by the node, under the same timeout.
    tried(response.status === 429 ? '429' : `${Math.floor(response.status / 100)}xx`);
    annotateSpan({ 'http.response.status_code': response.status });
    scope?.observeResponse(limited, response.status, response.headers);
    if (response.ok) {
      // Its body is read by the node, which reports the tokens it used (else its worst case stays counted).
      if (permit) attachPermit(response, permit);
      return response;
    }
    permit?.done(0);
    const text = redact(await response.text().catch(() => ''), request.headers);
    if (isRetryableStatus(response.status) && attempt < retries) {
      const asked = retryAfterMs(response.headers.get('retry-after'));
      if (asked === undefined || asked <= maxRetryAfter) {
        const backoff = baseDelay * 2 ** attempt * (0.75 + Math.random() * 0.5);
        await sleep(Math.max(asked ?? 0, backoff), undefined, { signal: request.signal });
        continue;
      }
    }
    throw final(failure(request.provider, response.status, providerMessage(text), response.headers.get('location')));
  }
}
