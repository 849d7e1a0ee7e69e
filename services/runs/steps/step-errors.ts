import type { RunError } from '../../contract';
import { microsToUsd } from '../../engine';
import { AppError, isAppError, isCallerError } from '../../platform/app-error';
import type { AttemptRefusal } from '../ports';

/** Error codes of `step.failed` and `run.failed` events that the service itself produces (docs/runs.md). */
export const RUN_ERROR_CODES = {
  spendCapExceeded: 'spend_cap_exceeded',
  aborted: 'aborted',
  lost: 'step_lost',
  missingOutput: 'missing_output',
  attemptsExhausted: 'step_attempts_exhausted',
  insufficientCredit: 'insufficient_credit',
  internal: 'internal',
  /** The run was cancelled by its owner or reached its own deadline (docs/runs.md, Cancellation). */
  cancelled: 'cancelled',
} as const;

/** The run stopped (another step failed, or it timed out) while this attempt ran: its call was aborted. */
export function abortedByRun(): AppError {
  return new AppError({ code: 'aborted_by_run', message: 'the run stopped' });
}

/**
 * A node call that returned, but whose result cannot be used (an output the run needs is
 * missing, the result cannot be priced or read): the call was made, so it is paid (`costMicros`),
 * and the failure is deterministic, so it is not retried. `reason` is its cause.
 */
export function failedAfterCall(reason: unknown, costMicros: number): AppError {
  return new AppError({ code: 'failed_after_call', message: reason instanceof Error ? reason.message : String(reason), details: { costMicros }, cause: reason });
}

/**
 * Whether a failure may go away if another attempt makes the same call: a provider call that
 * timed out or broke once sent, a stream that broke off. Providers raise `AppError` with
 * `unavailable` / `rate_limited`, or errors marked `transient`. Not transient here: a failure the
 * provider HTTP client has already retried as often as it may (`httpFinal`: an error status, a
 * connection never made), so that its tries are the one bound on calls for a permanent 5xx; and
 * an answer that is not a completion (`malformed_provider_response`: paid, and not made again).
 */
export function isTransient(err: unknown): boolean {
  if (isAppError(err, 'failed_after_call')) return false;
  if ((err as { httpFinal?: unknown } | null)?.httpFinal === true) return false;
  if (err instanceof AppError) return err.code === 'unavailable' || err.code === 'rate_limited';
  if (err instanceof Error && (err as { transient?: unknown }).transient === true) return true;
  return err instanceof Error && err.name === 'TimeoutError';
}

/**
 * Whether a failed call may have been carried out (and billed) by the provider without our knowing
 * its cost: it was aborted, or timed out, after the request went out.
 */
function outcomeUnknown(err: unknown): boolean {
  if (isAppError(err, 'aborted_by_run')) return true;
  if (err instanceof Error && err.name === 'TimeoutError') return true;
  return (err as { outcomeUnknown?: unknown } | null)?.outcomeUnknown === true;
}

/**
 * What a failed attempt is charged: what the provider says it cost (they bill some failed calls),
 * else `lostCharge` (the estimate of a node that calls out) when the outcome is unknown, else 0.
 */
export function costOfFailure(err: unknown, lostCharge: number): number {
  const cost = isAppError(err, 'failed_after_call') ? err.details?.costMicros : (err as { costMicros?: unknown } | null)?.costMicros;
  if (typeof cost === 'number' && Number.isSafeInteger(cost) && cost >= 0) return cost;
  return outcomeUnknown(err) ? lostCharge : 0;
}

/**
 * The `{ code, message }` of a failed step as callers see it: an AppError's own code and
 * message (they are written for callers); anything else is a bug or an unexpected failure,
 * reported without internals (the log has them).
 */
export function stepError(err: unknown, nodeId: string): RunError {
  if (isAppError(err, 'failed_after_call')) return stepError(err.cause, nodeId);
  if (isAppError(err, 'missing_output')) return { code: RUN_ERROR_CODES.missingOutput, message: err.message };
  if (isCallerError(err) && err.code !== 'internal') return { code: err.code, message: err.message };
  if (isAppError(err, 'internal')) return { code: RUN_ERROR_CODES.internal, message: `node "${nodeId}" failed: ${err.message}` };
  return { code: RUN_ERROR_CODES.internal, message: `node "${nodeId}" failed unexpectedly; the failure was logged` };
}

/** The run's error when an attempt of `nodeId` (worst case `estimate`) could not start. */
export function attemptRefused(reason: AttemptRefusal, nodeId: string, estimate: number, maxAttempts: number): RunError {
  if (reason === 'cap_exceeded') {
    return {
      code: RUN_ERROR_CODES.spendCapExceeded,
      message: `node "${nodeId}" may cost up to $${microsToUsd(estimate)}, more than what is left of the run's spend cap; it was not started (raise maxCostUsd, at most 1.00)`,
    };
  }
  if (reason === 'insufficient_credit') {
    return {
      code: RUN_ERROR_CODES.insufficientCredit,
      message: `node "${nodeId}" may cost up to $${microsToUsd(estimate)}, more than what is left of the organization's balance held for this run; it was not started (add credit)`,
    };
  }
  return { code: RUN_ERROR_CODES.attemptsExhausted, message: `node "${nodeId}" was started ${maxAttempts} times without finishing (its workers were lost); it is not started again` };
}

/** The step's error when it failed transiently (`err`) and another attempt was refused. */
export function retryRefused(reason: AttemptRefusal, err: unknown, nodeId: string, maxAttempts: number): RunError {
  const failed = stepError(err, nodeId);
  const why = {
    cap_exceeded: { code: RUN_ERROR_CODES.spendCapExceeded, text: "another attempt would exceed the run's spend cap" },
    insufficient_credit: { code: RUN_ERROR_CODES.insufficientCredit, text: "another attempt would exceed the organization's balance held for the run" },
    attempts_exhausted: { code: failed.code, text: `the step has had its ${maxAttempts} attempts` },
  }[reason];
  return { code: why.code, message: `node "${nodeId}" failed transiently (${failed.message}) and ${why.text}` };
}
