import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../platform/app-error';
import type { NodeContext } from '../node-definition';
import { malformedResponse } from './provider-response';

/** How long a queued provider job may take in all before we cancel it and fail the step. */
export const MAX_QUEUE_WAIT_MS = 15 * 60 * 1000;

/**
 * Runs `work` (submit, poll, fetch) and makes sure a job left behind is cancelled: when the
 * run's signal aborts, or the work fails after submitting, `cancel` is called once (best effort,
 * under its own short timeout, since the run's signal is already aborted) and the original
 * failure is rethrown. `work` sets `state.submitted` once the provider has accepted the job
 * (before that there is nothing to cancel) and `state.finished` once it has the result. A
 * failure after the job was accepted is marked `outcomeUnknown`: the provider may have run the
 * job and billed it, so the attempt is charged its worst case, as a cancelled one is.
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
    // The deadline's abort has cancelled the job already (onAbort); any other failure cancels it here.
    const failure = deadline.aborted ? new AppError({ code: 'unavailable', message: `the provider did not finish within ${MAX_QUEUE_WAIT_MS / 60000} minutes; the job was cancelled` }) : err;
    if (!deadline.aborted && state.submitted && !state.finished) await cancel(AbortSignal.timeout(10_000)).catch(() => undefined);
    // An accepted job may have run (and been billed) however its polling ended: charged its worst case.
    throw state.submitted && failure instanceof Error ? Object.assign(failure, { outcomeUnknown: true }) : failure;
  } finally {
    both.removeEventListener('abort', onAbort);
  }
}

/** Where a queue provider's job URLs must point, and how its refusals name things. */
export interface JobHost {
  provider: string;
  /** The configured base URL: our credential goes to its origin only. */
  baseUrl: string;
  /** What carried the URL, in a malformed answer's message, e.g. `an answer`, `a prediction`. */
  answer: string;
  /** What the provider's requests carry, e.g. `key`, `token`. */
  credential: string;
}

/**
 * A job URL the provider answered with (status, result, cancel), before our credential is sent to
 * it: anything but a URL is a malformed answer, a URL off the configured origin is refused.
 */
export function jobUrl(host: JobHost, url: unknown, what: string): string {
  if (typeof url !== 'string' || !URL.canParse(url)) throw malformedResponse(host.provider, `${host.answer} without a valid ${what}`);
  if (new URL(url).origin !== new URL(host.baseUrl).origin) {
    throw new AppError({ code: 'unavailable', message: `${host.provider} returned a ${what} outside ${new URL(host.baseUrl).origin}; refusing to send our ${host.credential} there` });
  }
  return url;
}

/** Waits between polls; rejects at once when the signal aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal });
}

/** Waits for a job's next poll: on the worker's shared poll timer in a step (woken by the provider's webhook), else a plain pause. */
export function nextPoll(ctx: NodeContext, ms: number, signal: AbortSignal): Promise<void> {
  return ctx.providerJob ? ctx.providerJob.nextPoll(ms, signal) : pause(ms, signal);
}
