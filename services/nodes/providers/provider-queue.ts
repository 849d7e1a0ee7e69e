import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../platform/app-error';

/** How long a queued provider job may take in all before we cancel it and fail the step. */
export const MAX_QUEUE_WAIT_MS = 15 * 60 * 1000;

/**
 * Runs `work` (submit, poll, fetch) and makes sure a job left behind is cancelled: when the
 * run's signal aborts, or the work fails after submitting, `cancel` is called once (best effort,
 * under its own short timeout, since the run's signal is already aborted) and the original
 * failure is rethrown. `work` sets `state.submitted` once the provider has accepted the job
 * (before that there is nothing to cancel) and `state.finished` once it has the result.
 */
export async function withCancel<T>(
  signal: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
  cancel: (signal: AbortSignal) => Promise<unknown>,
  state: { submitted: boolean; finished: boolean },
): Promise<T> {
  const deadline = AbortSignal.timeout(MAX_QUEUE_WAIT_MS);
  const both = AbortSignal.any([signal, deadline]);
  const onAbort = () => {
    if (state.submitted && !state.finished) void cancel(AbortSignal.timeout(10_000)).catch(() => undefined);
  };
  both.addEventListener('abort', onAbort, { once: true });
  try {
    return await work(both);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (deadline.aborted) throw new AppError({ code: 'unavailable', message: `the provider did not finish within ${MAX_QUEUE_WAIT_MS / 60000} minutes; the job was cancelled` });
    if (state.submitted && !state.finished) await cancel(AbortSignal.timeout(10_000)).catch(() => undefined);
    throw err;
  } finally {
    both.removeEventListener('abort', onAbort);
  }
}

/** Waits between polls; rejects at once when the signal aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal });
}
