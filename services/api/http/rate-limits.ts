import type { NextFunction, Request, Response } from 'express';
import type { RateLimitResult, RateLimitRule } from '../../queue';
import { overLimit, secondsOf, type CountedCall, type MinuteLimit, type TokenLimit } from '../auth/call-limits';

/** Health checks and metric scrapes are never limited (orchestrators and Prometheus poll them). */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

function isExempt(path: string): boolean {
  return EXEMPT.has(path.startsWith('/api/') ? path.slice(4) : path);
}

/** The IETF draft's `RateLimit-*` fields (draft-ietf-httpapi-ratelimit-headers): the limit, what is left, seconds to the reset. */
export function setRateLimitHeaders(res: Response, result: RateLimitResult): void {
  res.set({
    'RateLimit-Limit': String(result.limit),
    'RateLimit-Remaining': String(result.remaining),
    'RateLimit-Reset': String(secondsOf(result.resetMs)),
  });
}

/** The per-token limit, counted with the per-IP one for the requests whose token is known at once. */
export interface TokenCountedEarly {
  limit: TokenLimit;
  /** The token the call path will count this request under, when known without waiting; else undefined. */
  tokenOf(req: Request): string | undefined;
}

/**
 * The per-IP request limit, counted in Redis so that every replica shares it: mounted once,
 * before the routers, it counts every request (anonymous ones and blob downloads included). Its
 * window's state is kept in `res.locals.ipLimit`, so that the per-token limit (counted by
 * `invoke` once the caller is known) shows whichever of the two is closer to running out. A
 * refusal is `429 rate_limited` with `Retry-After` and a message naming the limit.
 *
 * With `early`, a request whose token `tokenOf` names has that token's call counted here too,
 * sent in the same turn as the IP's count (one write, one round trip instead of two in a row),
 * and the outcome left in `res.locals.tokenCounted` for `invoke`, which refuses or admits the call
 * on it instead of counting it again. A call the IP limit refuses is then a counted call of its
 * token, as every refused call of a valid token is.
 */
export function ipRateLimit(options: MinuteLimit, early?: TokenCountedEarly) {
  // Every request passes here: its hits are claimed a few at a time (RateLimitRule.claimAhead).
  const rule: RateLimitRule = { name: 'api-ip', limit: options.perMinute, windowMs: 60_000, claimAhead: true };
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (isExempt(req.path)) return next();
    const tokenId = early?.tokenOf(req);
    const ipCount = options.counter.hit(rule, req.ip ?? req.socket.remoteAddress ?? 'unknown');
    if (tokenId !== undefined) {
      // Neither promise rejects: a count that Redis did not answer fails open.
      const counted: CountedCall = { tokenId, result: await early!.limit.hit(tokenId) };
      res.locals.tokenCounted = counted;
    }
    const result = await ipCount;
    setRateLimitHeaders(res, result);
    res.locals.ipLimit = result;
    if (!result.allowed) {
      options.onLimited?.('ip');
      throw overLimit('ip', result);
    }
    next();
  };
}
