import { type ErrorCode, isErrorCode } from '../contract/error-codes';
import { APP_ERROR_CODES, type AppErrorCode } from './error-codes';

export interface AppErrorOptions {
  code: AppErrorCode;
  /** Tells the caller what to fix; safe to show to them (an internal code's is only logged). */
  message: string;
  /** Extra fields for the error body (for example `balanceUsd` on 402). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

/** The one error type of the service. Its code decides the HTTP status and retryability. */
export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(options: AppErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = options.code;
    this.details = options.details;
  }

  get status(): number {
    return APP_ERROR_CODES[this.code].status;
  }
}

/** An AppError a client may be shown: its code is one of the contract's. */
export type CallerError = AppError & { readonly code: ErrorCode };

/** What a client is told to wait before retrying a request that met an outage (Postgres or Redis away). */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/**
 * `503 unavailable` for a request that met an outage: `what` says what could not be done, and the
 * message ends with when to retry (`Retry-After` follows from its details on HTTP), then `how`.
 */
export function outageError(what: string, options: { cause?: unknown; how?: string } = {}): AppError {
  return new AppError({
    code: 'unavailable',
    message: `${what}; retry in ${OUTAGE_RETRY_AFTER_SECONDS} s${options.how === undefined ? '' : ` ${options.how}`}`,
    details: { retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS },
    ...(options.cause === undefined ? {} : { cause: options.cause }),
  });
}

/** Whether `err` is an AppError with `code`. */
export function isAppError<C extends AppErrorCode>(err: unknown, code: C): err is AppError & { readonly code: C } {
  return err instanceof AppError && err.code === code;
}

/** Whether `err` is written for callers: an AppError with a public code (an internal one is an unexpected failure to them). */
export function isCallerError(err: unknown): err is CallerError {
  return err instanceof AppError && isErrorCode(err.code);
}

/** Turns anything thrown into an AppError for callers; unknown and internal failures become `internal` with a generic message. */
export function toAppError(err: unknown): CallerError {
  if (isCallerError(err)) return err;
  if (err instanceof Error && isErrorCode((err as { code?: unknown }).code) && (err as { expose?: boolean }).expose) {
    return new AppError({ code: (err as unknown as { code: ErrorCode }).code, message: err.message, cause: err }) as CallerError;
  }
  return new AppError({ code: 'internal', message: 'internal error; the failure was logged', cause: err }) as CallerError;
}
