import { CALL_OPTIONS, validate, type CallOptionValues, type Operation } from '../../contract';
import { ConnectionError, InvalidInputError } from './errors';
import type { HttpRequest, RequestBody, Transport } from './transport';

/** Per-call options of every SDK method. */
export interface CallOptions {
  /** Aborts the request (and, for a run, following its events; the run itself goes on). */
  signal?: AbortSignal;
  /** Extra request headers of this call. */
  headers?: Record<string, string>;
  /**
   * Call options the operation takes, sent as their request headers (`runs.create`, `runs.node`,
   * the editor's runs): `maxDurationSeconds`, the run's own deadline; `idempotencyKey`, made up
   * (a UUID) when not given, and sent again with every retry of the same call.
   */
  options?: CallOptionValues;
}

/** Options of a call whose body is a file (`body: 'bytes'` declarations, e.g. `uploads.create`). */
export interface BytesCallOptions extends CallOptions {
  body?: RequestBody;
  /** The body's media type, as the caller believes it; the service sniffs the bytes anyway. */
  contentType?: string;
}

/**
 * The HTTP request of one call of a declared operation, built from its declaration alone: the
 * input is validated with the operation's own schema first (the same one the service validates
 * with, so a bad input costs no round trip and reads the same), path parameters are substituted
 * and encoded, the rest travels in the query (GET, DELETE, byte bodies) or as a JSON body.
 */
export function requestOf(op: Operation, input: unknown, options: BytesCallOptions = {}): HttpRequest {
  const fields = { ...(checkedInput(op, input ?? {}) as Record<string, unknown>) };
  const path = op.http.path.replace(/:([A-Za-z_]+)/g, (_match, name: string) => {
    const value = fields[name];
    delete fields[name];
    return encodeURIComponent(String(value));
  });
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  for (const name of op.http.options ?? []) {
    // A run creation always carries a key (the caller's, else a new one), so that sending this
    // same request again after a lost answer attaches to its run rather than starting another.
    const value = options.options?.[name] ?? (name === 'idempotencyKey' ? globalThis.crypto.randomUUID() : undefined);
    if (value !== undefined) headers[CALL_OPTIONS[name].header.toLowerCase()] = String(value);
  }
  if (op.response === 'sse') headers.accept = 'text/event-stream';
  const request: HttpRequest = { method: op.http.method, path, headers, signal: options.signal };
  const inQuery = op.http.method === 'GET' || op.http.method === 'DELETE' || op.http.body === 'bytes' || op.http.body === 'empty';
  if (inQuery) {
    const query: Record<string, string> = {};
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) query[key] = typeof value === 'string' ? value : JSON.stringify(value);
    }
    request.query = query;
  } else {
    headers['content-type'] = 'application/json';
    request.body = JSON.stringify(fields);
  }
  if (op.http.body === 'bytes') {
    if (options.body === undefined) throw new InvalidInputError(`${op.name}: the file to send is missing (options.body)`, { status: 0, code: 'validation_failed' });
    request.body = options.body;
    headers['content-type'] = options.contentType ?? 'application/octet-stream';
  }
  return request;
}

/** Set once compiling a validator failed with an EvalError (a strict Content-Security-Policy). */
let codeGenerationBlocked = false;

/**
 * The input, checked with the operation's schema. The validator is compiled at run time (ajv
 * generates code): a page whose Content-Security-Policy forbids that (no `'unsafe-eval'`) throws
 * an EvalError, and then the input goes unchecked to the service, which checks it with the same
 * schema and answers the same message as a 400.
 */
function checkedInput(op: Operation, input: unknown): unknown {
  if (codeGenerationBlocked) return input;
  let checked: ReturnType<typeof validate>;
  try {
    checked = validate(op.input, input);
  } catch (err) {
    if (err instanceof EvalError || (err as { name?: unknown } | null)?.name === 'EvalError') {
      // The page's policy does not change: later calls skip the check instead of failing again.
      codeGenerationBlocked = true;
      return input;
    }
    throw err;
  }
  if (!checked.ok) {
    throw new InvalidInputError(`${op.name}: ${checked.message}`, { status: 0, code: 'validation_failed', issues: checked.issues });
  }
  return checked.value;
}

/** Tries of an idempotent call whose connection failed, the first included, and the first pause between them (doubled each time). */
const IDEMPOTENT_TRIES = 4;
const IDEMPOTENT_RETRY_MS = 250;

/** Whether a request carries an idempotency key: sending it again is then safe. */
export function isIdempotent(request: HttpRequest): boolean {
  return request.headers?.['idempotency-key'] !== undefined;
}

/**
 * Calls a JSON operation and resolves with its parsed answer (`null` for `204 No Content`). A call
 * with an idempotency key (`runs.node`) whose connection failed, before or while waiting for its
 * answer, is sent again unchanged, its key with it: the service answers the run it started.
 */
export async function callJson(transport: Transport, op: Operation, input: unknown, options?: BytesCallOptions): Promise<unknown> {
  const request = requestOf(op, input, options);
  for (let attempt = 1; ; attempt++) {
    let response: Response;
    try {
      response = await transport.send(request);
      if (response.status === 204) return null;
      return await response.json();
    } catch (err) {
      const retry = isIdempotent(request) && attempt < IDEMPOTENT_TRIES && !options?.signal?.aborted && (err instanceof ConnectionError || isBrokenBody(err));
      if (!retry) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, IDEMPOTENT_RETRY_MS * 2 ** (attempt - 1)));
  }
}

/** A body whose connection broke while it was read (fetch's TypeError "terminated"), not an answer the service gave. */
function isBrokenBody(err: unknown): boolean {
  return err instanceof TypeError;
}
