import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waiting in tests for something to happen, or for something not to: conditions, never fixed
 * sleeps. The one pair of helpers; every test waits through them.
 */

export interface EventuallyOptions {
  /** Give up after this long (default 5 s). */
  timeoutMs?: number;
  /** Pause between checks (default 20 ms). */
  intervalMs?: number;
  /** What is awaited, for the failure message ("the run row", "streams to be released"). */
  what?: string;
}

/**
 * Checks `fn` until it returns a truthy value and returns that value. A check that returns a
 * falsy value or throws is tried again after `intervalMs`; after `timeoutMs` the wait fails,
 * naming `what` and the last error a check threw.
 */
export async function eventually<T>(fn: () => T | Promise<T>, { timeoutMs = 5000, intervalMs = 20, what = 'a condition' }: EventuallyOptions = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const reason = lastError === undefined ? '' : `; the last check threw: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}`, { cause: lastError });
    }
    await sleep(intervalMs);
  }
}

/**
 * Checks `fn` for `ms` milliseconds and fails at once if it ever returns a falsy value (or
 * throws): for asserting that something does not happen.
 */
export async function stillTrueFor(fn: () => unknown, ms: number, { intervalMs = 20, what = 'the condition' }: Omit<EventuallyOptions, 'timeoutMs'> = {}): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await fn())) throw new Error(`${what} stopped holding ${ms - Math.max(0, deadline - Date.now())} ms into ${ms} ms`);
    if (Date.now() >= deadline) return;
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}
