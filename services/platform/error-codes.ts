import { ERROR_CODES, type ErrorCode } from '../contract/error-codes';

/**
 * Codes of failures the service raises and handles inside itself. No client ever reads one: a
 * translator that meets one answers `internal`, as for any unexpected failure, so they are not
 * part of the contract's public codes.
 */
export type InternalErrorCode =
  /** A value a step needs is not there yet (its producer has not finished), or the data is corrupt. */
  | 'missing_value'
  /** A completed step lacks an output a reference reads and the port has no default; `details.nodeId`, `details.port`. */
  | 'missing_output'
  /** The run stopped while this attempt's call ran: the call was aborted. */
  | 'aborted_by_run'
  /** A node call returned but its result cannot be used; `cause` is why, `details.costMicros` what the call is charged. */
  | 'failed_after_call'
  /** A stored run cannot be prepared again (the catalog changed under it, or the row is corrupt); `details.runId`. */
  | 'run_unpreparable'
  /** A data input that is not the service's own file, so its bytes are not hashed for the output cache. */
  | 'foreign_input';

/** Every code an AppError may carry. */
export type AppErrorCode = ErrorCode | InternalErrorCode;

export interface ErrorCodeRule {
  status: number;
  retryable: boolean;
}

/** What a client is answered when an internal failure reaches a translator. */
const ANSWERED_AS_INTERNAL = ERROR_CODES.internal;

/**
 * The one table from error code to HTTP status and retryability: the contract's public codes,
 * and the internal ones, each answered as `internal`.
 */
export const APP_ERROR_CODES: Readonly<Record<AppErrorCode, ErrorCodeRule>> = {
  ...ERROR_CODES,
  missing_value: ANSWERED_AS_INTERNAL,
  missing_output: ANSWERED_AS_INTERNAL,
  aborted_by_run: ANSWERED_AS_INTERNAL,
  failed_after_call: ANSWERED_AS_INTERNAL,
  run_unpreparable: ANSWERED_AS_INTERNAL,
  foreign_input: ANSWERED_AS_INTERNAL,
};
