import { AsyncLocalStorage } from 'node:async_hooks';

/** One provider request, as the scope sees it before it is sent. */
export interface ScopedRequest {
  provider: string;
  /** The model the request is for, where the provider's limits may be stated per model. */
  model?: string;
  /** Tokens the request may use at worst (an LLM call's prompt and answer); 0 otherwise. */
  tokens: number;
  signal: AbortSignal;
}

/** A request's place in its provider's budget, given back once its outcome is known. */
export interface RequestPermit {
  /** The request is over; `usedTokens`: what its answer reported, to correct its worst case. Idempotent. */
  done(usedTokens?: number): void;
}

/**
 * What a node's provider requests run under, set by the step that calls the node: the shared
 * provider limits (each request waits for its turn), what the providers' answers teach about
 * them (a 429's `Retry-After`, remaining-requests headers), and the worker's slot, given back
 * while the step waits on a provider. Outside a step (tests, tools) there is none, and
 * requests go out at once.
 */
export interface ProviderScope {
  beforeRequest(request: ScopedRequest): Promise<RequestPermit>;
  /** A response's status and headers (every try's, 429s included). */
  observeResponse(request: Pick<ScopedRequest, 'provider' | 'model'>, status: number, headers: Headers): void;
}

const storage = new AsyncLocalStorage<ProviderScope>();

/** Runs `work` with its provider requests under `scope`. */
export function withProviderScope<T>(scope: ProviderScope | undefined, work: () => Promise<T>): Promise<T> {
  return scope ? storage.run(scope, work) : work();
}

/** The scope of the node call this code runs in, if any. */
export function providerScope(): ProviderScope | undefined {
  return storage.getStore();
}

const permits = new WeakMap<Response, RequestPermit>();

/** Ties a response to its request's permit, so that the node reading its body can report its usage. */
export function attachPermit(response: Response, permit: RequestPermit): void {
  permits.set(response, permit);
}

/**
 * The answer of `response` used `tokens` (an LLM's reported usage): its request's worst case is
 * corrected in the provider's tokens-per-minute budget. A response sent outside a scope has no permit.
 */
export function reportTokenUsage(response: Response, tokens: number): void {
  permits.get(response)?.done(tokens);
}
