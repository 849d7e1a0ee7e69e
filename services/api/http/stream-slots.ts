import type { Response } from 'express';
import { AppError } from '../../platform/app-error';
import type { AuthContext } from '../auth/auth-context';

/** A held stream slot; `release` gives it back (calling it again does nothing). */
export interface StreamSlot {
  release(): void;
}

/**
 * Port: the open-stream slots of each organization, shared by every API replica (leases in
 * Redis, `StreamLeases`). `take` answers null when the organization holds all of its slots.
 */
export interface StreamSlots {
  /** Slots per organization. */
  readonly perOrg: number;
  take(orgId: string): Promise<StreamSlot | null>;
  /** Told about every refusal. */
  onRefused?(): void;
}

/** What a client that found every slot held is told to wait before trying again. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Runs `work` (a request that holds a response open while a run goes on: an event stream, or
 * `runs.node` waiting for its run) in one of the caller's organization's stream slots, taken
 * before `work` starts (so a refused `POST /v1/runs` creates no run) and given back when it
 * ends, however it ends. All slots held: `429 rate_limited` with `Retry-After`.
 */
export async function inStreamSlot<T>(slots: StreamSlots | undefined, res: Response, work: () => Promise<T>): Promise<T> {
  if (!slots) return work();
  const auth = res.locals.auth as AuthContext;
  const slot = await slots.take(auth.orgId);
  if (!slot) {
    slots.onRefused?.();
    res.set('Retry-After', String(RETRY_AFTER_SECONDS));
    throw new AppError({
      code: 'rate_limited',
      message: `your organization already has ${slots.perOrg} run streams open, the most it may; wait for one to end (or close one), then retry`,
      details: { limit: 'open_streams', retryAfterSeconds: RETRY_AFTER_SECONDS },
    });
  }
  // Given back as soon as the response is over (sent, or its client gone), even while the
  // stream's own cleanup (its Redis subscription) is still under way.
  res.once('close', () => slot.release());
  try {
    return await work();
  } finally {
    slot.release();
  }
}
