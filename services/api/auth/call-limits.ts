import { AppError } from '../../platform/app-error';
import type { RateLimitResult, RateLimitRule } from '../../queue';
import type { AuthContext } from './auth-context';

/** Port: counts hits in a window shared by every API replica (the Redis `RateLimiter`). */
export interface RateCounter {
  hit(rule: RateLimitRule, key: string): Promise<RateLimitResult>;
}

/** Which limit refused a call (the `limit` label of `svc_rate_limited_total`). */
export type LimitName = 'token' | 'ip' | 'open_streams';

/** What a refused caller is told; `Retry-After` on HTTP. */
export function rateLimited(message: string, limit: LimitName, retryAfterSeconds: number): AppError {
  return new AppError({ code: 'rate_limited', message, details: { limit, retryAfterSeconds } });
}

const WINDOW_MS = 60_000;

export const secondsOf = (ms: number): number => Math.ceil(ms / 1000);

const SUBJECTS: Record<'token' | 'ip', string> = { token: 'this access token', ip: 'your IP address' };

/** The refusal of a request over a per-minute limit. */
export function overLimit(limit: 'token' | 'ip', result: RateLimitResult): AppError {
  const retryAfter = Math.max(1, secondsOf(result.resetMs));
  return rateLimited(`too many requests from ${SUBJECTS[limit]}: the limit is ${result.limit} per minute; retry in ${retryAfter} s`, limit, retryAfter);
}

/** A per-minute limit: its rule, and who is told about refusals. */
export interface MinuteLimit {
  counter: RateCounter;
  perMinute: number;
  onLimited?: (limit: LimitName) => void;
}

/** A call of a token counted before the call path ran (HTTP: beside the per-IP count, sent with it). */
export interface CountedCall {
  tokenId: string;
  result: RateLimitResult;
}

/**
 * The per-token request limit, counted in Redis so every replica shares it. Every call of a
 * valid token counts (refused ones included); `report` sees the window's state (HTTP sends it as
 * `RateLimit-*` headers) before a call over the budget is refused.
 */
export class TokenLimit {
  private readonly rule: RateLimitRule;

  constructor(private readonly options: MinuteLimit) {
    // Every call of a token counts: its hits are claimed a few at a time (RateLimitRule.claimAhead).
    this.rule = { name: 'api-token', limit: options.perMinute, windowMs: WINDOW_MS, claimAhead: true };
  }

  /** Counts one call of the token, and only counts: `count` given the outcome refuses or admits it. */
  hit(tokenId: string): Promise<RateLimitResult> {
    return this.options.counter.hit(this.rule, tokenId);
  }

  /** Counts the call (unless `counted` already did, for this token) and refuses it over the limit. */
  async count(auth: AuthContext, report?: (state: RateLimitResult) => void, counted?: CountedCall): Promise<void> {
    const result = counted?.tokenId === auth.tokenId ? counted.result : await this.hit(auth.tokenId);
    report?.(result);
    if (result.allowed) return;
    this.options.onLimited?.('token');
    throw overLimit('token', result);
  }
}

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
const SLOT_RETRY_AFTER_SECONDS = 5;

/** One of the organization's stream slots; every slot held: `429 rate_limited`. */
export async function takeStreamSlot(slots: StreamSlots, orgId: string): Promise<StreamSlot> {
  const slot = await slots.take(orgId);
  if (slot) return slot;
  slots.onRefused?.();
  throw rateLimited(
    `your organization already has ${slots.perOrg} run streams open, the most it may; wait for one to end (or close one), then retry`,
    'open_streams',
    SLOT_RETRY_AFTER_SECONDS,
  );
}
