import { isErrorCode, isRetryable, type ErrorCode, type RunError, type ValidationIssue } from '../../contract';

/**
 * Every failure the SDK reports is a {@link ServiceError}: an HTTP answer of the service, a
 * problem found in the input before anything was sent, a failed run, or a connection that could
 * not be made. Branch on the class or on `code` (the stable reason, the same table the server
 * uses), never on the message text, which is written for people.
 */
export class ServiceError extends Error {
  /** HTTP status of the answer; 0 when no answer came (a connection failure) or nothing was sent. */
  readonly status: number;
  /** The service's machine-readable reason (`validation_failed`, `insufficient_credit`, …). */
  readonly code: string;
  /** The service's request id (`X-Request-Id`), for support. */
  readonly requestId: string | undefined;
  /** The whole error body the service answered, for fields particular to a code. */
  readonly body: Record<string, unknown> | undefined;

  constructor(message: string, init: { status: number; code: string; requestId?: string; body?: Record<string, unknown>; cause?: unknown }) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.body = init.body;
  }

  /** Whether sending the same request again, unchanged, may succeed (a 429, 5xx or lost connection). */
  get retryable(): boolean {
    return isErrorCode(this.code) ? isRetryable(this.code) : this.status === 0;
  }
}

/** The input failed the contract's schema before anything was sent (or the server said `400`). */
export class InvalidInputError extends ServiceError {
  /** Each problem with where it is (`workflow.nodes[2].uses`). */
  readonly issues: readonly ValidationIssue[];
  constructor(message: string, init: ConstructorParameters<typeof ServiceError>[1] & { issues?: readonly ValidationIssue[] }) {
    super(message, init);
    this.issues = init.issues ?? [];
  }
}

/** `401`: no token, or a malformed, unknown, revoked or expired one. */
export class AuthenticationError extends ServiceError {}

/** `403`: the token lacks the scope, or the credential kind may not do this. */
export class PermissionError extends ServiceError {}

/** `404`: no such node, workflow, run or token (or not yours). */
export class NotFoundError extends ServiceError {}

/** `402 insufficient_credit`: the organization's balance cannot cover the run's cap. */
export class InsufficientCreditError extends ServiceError {
  /** The organization's balance in USD when the run was refused. */
  readonly balanceUsd: number | undefined;
  constructor(message: string, init: ConstructorParameters<typeof ServiceError>[1]) {
    super(message, init);
    const balance = init.body?.balanceUsd;
    this.balanceUsd = typeof balance === 'number' ? balance : undefined;
  }
}

/** `413`: the body (an upload, a workflow) is larger than the service accepts. */
export class PayloadTooLargeError extends ServiceError {}

/** `429`: too many requests; `retryAfterSeconds` says when to try again. */
export class RateLimitError extends ServiceError {
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, init: ConstructorParameters<typeof ServiceError>[1] & { retryAfterSeconds?: number }) {
    super(message, init);
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** `5xx`: the service failed or is unavailable; the request may be retried. */
export class ServerError extends ServiceError {}

/** No answer: the service could not be reached, or the connection dropped and could not be resumed. */
export class ConnectionError extends ServiceError {
  constructor(message: string, cause?: unknown) {
    super(message, { status: 0, code: 'connection_failed', cause });
  }
}

/**
 * A run ended with `run.failed` (or `runs.node` answered `422 run_failed`). `code` is the run
 * error's code (`spend_cap_exceeded`, `provider_error`, …), `runId` the run, for
 * `GET /v1/runs/:id` and support. The service does not retry runs: neither should a caller, blindly.
 */
export class RunFailedError extends ServiceError {
  readonly runId: string;
  /** The run error as the service sent it. */
  readonly error: RunError;
  constructor(runId: string, error: RunError, status = 0) {
    super(error.message, { status, code: error.code });
    this.runId = runId;
    this.error = error;
  }
}

/** The class of each status; other 4xx are plain ServiceErrors. */
const BY_STATUS: Record<number, typeof ServiceError> = {
  400: InvalidInputError,
  401: AuthenticationError,
  402: InsufficientCreditError,
  403: PermissionError,
  404: NotFoundError,
  413: PayloadTooLargeError,
  429: RateLimitError,
};

/** What the SDK needs of an HTTP answer to translate it. */
export interface ErrorAnswer {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/**
 * The one translator from an HTTP error answer to an SDK error. The body is the service's
 * `{ error, code, ... }`; anything else (a proxy's HTML page) still becomes an error that says
 * what came back.
 */
export async function errorFromResponse(response: ErrorAnswer): Promise<ServiceError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const text = await response.text().catch(() => '');
  let body: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  const status = response.status;
  // OAuth routes answer RFC 6749 bodies: { error: <code>, error_description }.
  const message =
    typeof body?.error_description === 'string'
      ? body.error_description
      : typeof body?.error === 'string'
        ? body.error
        : `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`;
  const code = typeof body?.code === 'string' ? body.code : typeof body?.error_description === 'string' && typeof body.error === 'string' ? body.error : codeOfStatus(status);
  const init = { status, code, requestId, body };
  if (code === 'run_failed' && typeof body?.runId === 'string' && isRunError(body.runError)) {
    return new RunFailedError(body.runId, body.runError, status);
  }
  if (status === 400) {
    const issues = Array.isArray(body?.issues) ? (body.issues as ValidationIssue[]) : undefined;
    return new InvalidInputError(message, { ...init, issues });
  }
  if (status === 429) {
    const header = Number(response.headers.get('retry-after'));
    return new RateLimitError(message, { ...init, retryAfterSeconds: Number.isFinite(header) && header >= 0 ? header : undefined });
  }
  const Class = BY_STATUS[status] ?? (status >= 500 ? ServerError : ServiceError);
  return new Class(message, init);
}

function isRunError(value: unknown): value is RunError {
  return value !== null && typeof value === 'object' && typeof (value as RunError).code === 'string' && typeof (value as RunError).message === 'string';
}

function codeOfStatus(status: number): ErrorCode | 'http_error' {
  if (status >= 500) return status === 503 ? 'unavailable' : 'internal';
  const byStatus: Partial<Record<number, ErrorCode>> = { 400: 'bad_request', 401: 'unauthorized', 402: 'insufficient_credit', 403: 'forbidden', 404: 'not_found', 413: 'payload_too_large', 429: 'rate_limited' };
  return byStatus[status] ?? 'http_error';
}
