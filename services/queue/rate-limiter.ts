import type { Redis } from 'ioredis';
import { RedisScript, withTimeout } from './redis-script';

/** A limit: at most `limit` hits per `windowMs` for one key (a token, an IP, a user). */
export interface RateLimitRule {
  /** Names the rule in Redis keys and logs, e.g. `api-token`, `device-user-code`. */
  name: string;
  limit: number;
  windowMs: number;
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

const HIT = new RedisScript(`
--[[
  Count hits of one key in its current window (a fixed window that starts with its first hit).

  Input:
    KEYS[1]  the key's counter (string; expires when its window ends)

    ARGV[1]  hits to add
    ARGV[2]  window length in milliseconds

  Output:
    {count, ttl}: the window's hits so far, this one included, and its milliseconds left
]]
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {n, ttl}
`);

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
 * per hit, atomic, one round trip. A Redis that cannot be reached, or that does not answer
 * within `timeoutMs`, fails open (the hit is allowed and the error reported to `onError`): a
 * rate limiter must not take the API down with it.
 */
export class RateLimiter {
  private readonly timeoutMs: number;

  constructor(private readonly options: RateLimiterOptions) {
    this.timeoutMs = options.timeoutMs ?? 500;
  }

  /** Counts `cost` hits of `key` under `rule`; refused once the window's count exceeds the limit. */
  async hit(rule: RateLimitRule, key: string, cost = 1): Promise<RateLimitResult> {
    try {
      const reply = HIT.run(this.options.redis, [this.keyOf(rule, key)], [cost, rule.windowMs]) as Promise<[number, number]>;
      const [count, ttl] = await withTimeout(reply, this.timeoutMs, `rate limit ${rule.name}`);
      return { allowed: count <= rule.limit, limit: rule.limit, remaining: Math.max(0, rule.limit - count), resetMs: Math.max(0, Number(ttl)) };
    } catch (err) {
      this.options.onError?.(err);
      return { allowed: true, limit: rule.limit, remaining: rule.limit, resetMs: rule.windowMs };
    }
  }

  /** Forgets the key's window (e.g. failed sign-in attempts after a successful one). */
  async reset(rule: RateLimitRule, key: string): Promise<void> {
    await this.options.redis.del(this.keyOf(rule, key));
  }

  private keyOf(rule: RateLimitRule, key: string): string {
    return `${this.options.prefix}:rl:${rule.name}:${key}`;
  }
}
