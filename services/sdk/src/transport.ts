import { ConnectionError, errorFromResponse } from './errors';

/**
 * Where the SDK sends requests when no `baseUrl` is given. The service has no public deployment
 * yet, so this is the address `make run` serves; a deployment's own SDK build, or every caller,
 * names its base (SPEC: "a deployment called directly serves the API under the `/api` prefix").
 */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

/** The `fetch` the SDK calls: the platform's, or one a caller passes (a proxy agent, a test spy). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Settings of the SDK's HTTP layer. */
export interface TransportOptions {
  /** An access token (`svc_…` personal or `svcs_…` device-login session); omitted: anonymous (the catalog works without). */
  apiKey?: string;
  /** The API base, e.g. `https://studio.example.com/api`; paths such as `/v1/nodes` are appended. */
  baseUrl?: string;
  fetch?: FetchLike;
  /** Extra headers on every request (e.g. a tracing header). */
  headers?: Record<string, string>;
}

/** A request body in any form the platform's fetch sends (text, bytes, a Blob, a stream). */
export type RequestBody = NonNullable<RequestInit['body']>;

/** One HTTP request, relative to the base. */
export interface HttpRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Path under the base, already encoded (`/v1/runs/…/events`). */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: RequestBody;
  signal?: AbortSignal;
}

/**
 * Sends requests to one service with one credential. Answers with a status of 400 or more are
 * thrown as the SDK's typed errors (one translator, {@link errorFromResponse}); a request that
 * gets no answer is a {@link ConnectionError}. An abort by the caller's signal is rethrown as is
 * (its `name` is `AbortError`), so callers can tell "I stopped" from "it failed".
 */
export class Transport {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: FetchLike;
  readonly #headers: Record<string, string>;

  constructor(options: TransportOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    const platformFetch: FetchLike | undefined = typeof globalThis.fetch === 'function' ? (input, init) => globalThis.fetch(input, init) : undefined;
    const chosen = options.fetch ?? platformFetch;
    if (!chosen) throw new TypeError('no fetch is available on this platform: pass options.fetch (Node 20+ and browsers have one)');
    this.#fetch = chosen;
    this.#headers = { ...(options.headers ?? {}) };
  }

  /** Whether requests carry a token. */
  get authenticated(): boolean {
    return this.#apiKey !== undefined;
  }

  /** The absolute URL of a path under the base, with its query. */
  urlOf(path: string, query?: Record<string, string>): string {
    const search = query && Object.keys(query).length > 0 ? `?${new URLSearchParams(query).toString()}` : '';
    return `${this.baseUrl}${path}${search}`;
  }

  /** Sends the request; resolves with the answer when its status is below 400. */
  async send(request: HttpRequest): Promise<Response> {
    const headers: Record<string, string> = { ...this.#headers, ...(request.headers ?? {}) };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers, signal: request.signal };
    if (request.body !== undefined) {
      init.body = request.body;
      // A streamed body (an upload from a file) needs half duplex in Node's fetch.
      if (typeof ReadableStream !== 'undefined' && request.body instanceof ReadableStream) init.duplex = 'half';
    }
    let response: Response;
    try {
      response = await this.#fetch(this.urlOf(request.path, request.query), init);
    } catch (err) {
      if (request.signal?.aborted) throw request.signal.reason ?? err;
      throw new ConnectionError(`could not reach the service at ${this.baseUrl}: ${describe(err)}`, err);
    }
    if (response.status >= 400) throw await errorFromResponse(response);
    return response;
  }
}

/** The most telling words of a fetch failure (Node puts the system error under `cause`). */
export function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) return `${err.message} (${cause.message})`;
    return err.message;
  }
  return String(err);
}
