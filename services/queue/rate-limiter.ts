import type { Redis } from 'ioredis';
import { RedisScript, withTimeout } from './redis-script';

/** A limit: at most `limit` hits per `windowMs` for one key (a token, an IP, a user). */
export interface RateLimitRule {
  /** Names the rule in Redis keys and logs, e.g. `api-token`, `device-user-code`. */
  name: string;
  limit: number;
  windowMs: number;
  /**
   * Hits of one key counted in Redis a few at a time, the ones not used yet spent by this replica
   * without a round trip ({@link claimSize}); for limits of every request, where one round trip
   * per request shows. A replica may then hold hits another could have used near the limit.
   */
  claimAhead?: boolean;
}

/**
 * How many hits a replica counts in Redis at once under a rule that claims ahead: a hundredth of
 * the limit, 1 to 100 (a limit under 200 is counted hit by hit, exactly as without).
 */
export function claimSize(limit: number): number {
  return Math.min(100, Math.max(1, Math.floor(limit / 100)));
}

/** Keys whose claimed hits a replica keeps at most (a flood of new addresses claims hit by hit beyond). */
export const MAX_CLAIMED_KEYS = 10_000;

/**
 * Hits of one key's window counted in Redis by this replica and not spent yet: `count` is the
 * window's count in Redis after this replica's last claim, `ends` when the window ends at the
 * latest (`performance.now()`: the claim's send time plus the TTL Redis answered, so never later
 * than Redis' own end).
 */
interface Claimed {
  limit: number;
  count: number;
  spare: number;
  ends: number;
}

/** The outcome of one hit, with what the `RateLimit-*` response headers report. */
export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  /** Hits left in the current window (0 when refused). */
  remaining: number;
  /** Milliseconds until the window resets (for `RateLimit-Reset` and `Retry-After`). */
  resetMs: number;
}

const HIT = RedisScript.fromFile('rate-limit-hit');

export interface RateLimiterOptions {
  redis: Redis;
  prefix: string;
  /** Told about every hit that failed open (Redis unreachable or too slow). */
  onError?: (err: unknown) => void;
  /** How long a hit waits for Redis before it fails open; default 500 ms. */
  timeoutMs?: number;
}

/**
 * Rate limits kept in Redis, so every replica of the API enforces the same budget: one script
 * per hit, atomic, one round trip (under a rule that claims ahead, one per few hits of a key on
 * a replica, the others counted already). A Redis that cannot be reached, or that does not answer
 * within `timeoutMs`, fails open (the hit is allowed and the error reported to `onError`): a
 * rate limiter must not take the API down with it.
 */
export class RateLimiter {
  private readonly timeoutMs: number;
  /** Spare hits this replica claimed, by Redis key (rules that claim ahead). */
  private readonly claimed = new Map<string, Claimed>();
  private sweptAt = -Infinity;

  constructor(private readonly options: RateLimiterOptions) {
    this.timeoutMs = options.timeoutMs ?? 500;
  }

  /**
   * Counts `cost` hits of `key` under `rule`; refused once the window's count exceeds the limit.
   * Under a rule that claims ahead, a single hit is taken from this replica's spare hits of the
   * key's window when it has one, without Redis; else it claims up to `claimSize` hits at once
   * (no more than the window has left, as far as this replica knows), keeps those within the
   * limit beyond the first as spare, and the window's state it reports counts them as its own.
   */
  async hit(rule: RateLimitRule, key: string, cost = 1): Promise<RateLimitResult> {
    const redisKey = this.keyOf(rule, key);
    const ahead = cost === 1 && rule.claimAhead === true;
    const now = performance.now();
    let known: Claimed | undefined;
    if (ahead) {
      known = this.claimed.get(redisKey);
      if (known && (known.ends <= now || known.limit !== rule.limit)) {
        this.claimed.delete(redisKey);
        known = undefined;
      }
      if (known && known.spare > 0) {
        known.spare--;
        return { allowed: true, limit: rule.limit, remaining: Math.max(0, rule.limit - known.count + known.spare), resetMs: Math.max(0, known.ends - now) };
      }
    }
    const claim = ahead && this.mayKeep(redisKey) ? Math.max(1, Math.min(claimSize(rule.limit), rule.limit - (known?.count ?? 0))) : cost;
    try {
      const reply = HIT.run(this.options.redis, [redisKey], [claim, rule.windowMs]) as Promise<[number, number]>;
      const [count, ttl] = (await withTimeout(reply, this.timeoutMs, `rate limit ${rule.name}`)).map(Number) as [number, number];
      // This hit is the first of those claimed; the rest within the limit are spare.
      const first = count - claim + 1;
      const allowed = first <= rule.limit;
      const spare = allowed ? Math.max(0, Math.min(claim - 1, rule.limit - first)) : 0;
      const resetMs = Math.max(0, ttl);
      if (ahead) this.keep(redisKey, { limit: rule.limit, count, spare, ends: now + resetMs });
      const own = ahead ? (this.claimed.get(redisKey)?.spare ?? 0) : 0;
      return { allowed, limit: rule.limit, remaining: Math.max(0, rule.limit - count + own), resetMs };
    } catch (err) {
      this.options.onError?.(err);
      return { allowed: true, limit: rule.limit, remaining: rule.limit, resetMs: rule.windowMs };
    }
  }

  /** Forgets the key's window (e.g. failed sign-in attempts after a successful one). */
  async reset(rule: RateLimitRule, key: string): Promise<void> {
    this.claimed.delete(this.keyOf(rule, key));
    await this.options.redis.del(this.keyOf(rule, key));
  }

  /**
   * Whether a claim of `key` may be kept: it is kept already, or there is room, after dropping
   * ended windows at most once a second (a flood of new keys must not make every request walk
   * the whole map).
   */
  private mayKeep(key: string): boolean {
    if (this.claimed.has(key) || this.claimed.size < MAX_CLAIMED_KEYS) return true;
    const now = performance.now();
    if (now - this.sweptAt < 1000) return false;
    this.sweptAt = now;
    for (const [kept, claimed] of this.claimed) if (claimed.ends <= now) this.claimed.delete(kept);
    return this.claimed.size < MAX_CLAIMED_KEYS;
  }

  /**
   * Keeps a claim's outcome: added to what is kept of the same window (claims sent together each
   * bring their spare hits), or in place of an ended or other window's.
   */
  private keep(key: string, claimed: Claimed): void {
    const kept = this.claimed.get(key);
    if (kept && kept.limit === claimed.limit && kept.ends > performance.now() && Math.abs(kept.ends - claimed.ends) < 1000) {
      kept.count = Math.max(kept.count, claimed.count);
      kept.spare += claimed.spare;
      return;
    }
    if (kept || this.mayKeep(key)) this.claimed.set(key, claimed);
  }

  private keyOf(rule: RateLimitRule, key: string): string {
    return `${this.options.prefix}:rl:${rule.name}:${key}`;
  }
}
