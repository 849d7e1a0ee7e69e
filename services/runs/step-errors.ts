import type { RunError } from '../contract';
import { AppError } from '../platform/app-error';

/** Error codes of `step.failed` and `run.failed` events that the service itself produces (docs/runs.md). */
export const RUN_ERROR_CODES = {
  spendCapExceeded: 'spend_cap_exceeded',
  aborted: 'aborted',
  lost: 'step_lost',
  internal: 'internal',
} as const;

/**
 * Whether a failure may go away if the same call is made again: provider timeouts, 429 and 5xx.
 * Providers raise `AppError` with `unavailable` / `rate_limited`, or errors marked `transient`.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof AppError) return err.code === 'unavailable' || err.code === 'rate_limited';
  if (err instanceof Error && (err as { transient?: unknown }).transient === true) return true;
  return err instanceof Error && err.name === 'TimeoutError';
}

/** What a failed attempt cost, when the provider says (they bill some failed calls); else 0. */
export function costOfFailure(err: unknown): number {
  const cost = (err as { costMicros?: unknown } | null)?.costMicros;
  return typeof cost === 'number' && Number.isSafeInteger(cost) && cost >= 0 ? cost : 0;
}

/**
 * The `{ code, message }` of a failed step as callers see it: an AppError's own code and
 * message (they are written for callers); anything else is a bug or an unexpected failure,
 * reported without internals (the log has them).
 */
export function stepError(err: unknown, nodeId: string): RunError {
  if (err instanceof AppError && err.code !== 'internal') return { code: err.code, message: err.message };
  if (err instanceof AppError) return { code: RUN_ERROR_CODES.internal, message: `node "${nodeId}" failed: ${err.message}` };
  return { code: RUN_ERROR_CODES.internal, message: `node "${nodeId}" failed unexpectedly; the failure was logged` };
}
