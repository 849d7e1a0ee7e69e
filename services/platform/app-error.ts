import { type ErrorCode, isErrorCode, statusOf } from '../contract/error-codes';

export interface AppErrorOptions {
  code: ErrorCode;
  /** Tells the caller what to fix; safe to show to them. */
  message: string;
  /** Extra fields for the error body (for example `balanceUsd` on 402). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

/** The one error type of the service. Its code decides the HTTP status and retryability. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(options: AppErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = options.code;
    this.details = options.details;
  }

  get status(): number {
    return statusOf(this.code);
  }
}

/** Turns anything thrown into an AppError; unknown failures become `internal` with a generic message. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof Error && isErrorCode((err as { code?: unknown }).code) && (err as { expose?: boolean }).expose) {
    return new AppError({ code: (err as unknown as { code: ErrorCode }).code, message: err.message, cause: err });
  }
  return new AppError({ code: 'internal', message: 'internal error; the failure was logged', cause: err });
}
