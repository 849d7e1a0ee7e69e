import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../platform/app-error';
import type { RateLimitResult, RateLimitRule } from '../../queue';
import { setCallerGate } from '../auth/caller-gate';

/** Port: counts hits in a window shared by every API replica (the Redis `RateLimiter`). */
export interface RateCounter {
  hit(rule: RateLimitRule, key: string): Promise<RateLimitResult>;
}

/** Which limit refused a request (the `limit` label of `svc_rate_limited_total`). */
export type LimitName = 'token' | 'ip' | 'open_streams';

export interface RateLimitOptions {
  counter: RateCounter;
  /** Requests per minute of one access token; 0: no limit. */
  tokenPerMinute: number;
  /** Requests per minute from one client IP address (`req.ip`, so TRUST_PROXY applies); 0: no limit. */
  ipPerMinute: number;
  /** Told about every refusal. */
  onLimited?: (limit: LimitName) => void;
}

const WINDOW_MS = 60_000;

/** Health checks and metric scrapes are never limited (orchestrators and Prometheus poll them). */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

function isExempt(path: string): boolean {
  return EXEMPT.has(path.startsWith('/api/') ? path.slice(4) : path);
}

const seconds = (ms: number): number => Math.ceil(ms / 1000);

/** The IETF draft's `RateLimit-*` fields (draft-ietf-httpapi-ratelimit-headers): the limit, what is left, seconds to the reset. */
function setHeaders(res: Response, result: RateLimitResult): void {
  res.set({
    'RateLimit-Limit': String(result.limit),
    'RateLimit-Remaining': String(result.remaining),
    'RateLimit-Reset': String(seconds(result.resetMs)),
  });
}

const SUBJECTS: Record<Exclude<LimitName, 'open_streams'>, string> = {
  token: 'this access token',
  ip: 'your IP address',
};

function refusal(res: Response, limit: 'token' | 'ip', result: RateLimitResult): AppError {
  const retryAfter = Math.max(1, seconds(result.resetMs));
  res.set('Retry-After', String(retryAfter));
  return new AppError({
    code: 'rate_limited',
    message: `too many requests from ${SUBJECTS[limit]}: the limit is ${result.limit} per minute; retry in ${retryAfter} s`,
    details: { limit, retryAfterSeconds: retryAfter },
  });
}

/**
 * The API's request rate limits, counted in Redis so that every replica shares them. Mounted
 * once, before the routers: the per-IP limit is checked here, for every request (anonymous ones
 * and blob downloads included); the per-token limit is installed as the request's caller gate
 * and checked by the authentication middleware once the token is known, so every router that
 * authenticates has it. A response of a limited request carries `RateLimit-Limit`,
 * `RateLimit-Remaining` and `RateLimit-Reset` of the limit closest to running out; a refusal is
 * `429 rate_limited` with `Retry-After` and a message naming the limit.
 */
export function rateLimits(options: RateLimitOptions) {
  const ipRule: RateLimitRule | null = options.ipPerMinute > 0 ? { name: 'api-ip', limit: options.ipPerMinute, windowMs: WINDOW_MS } : null;
  const tokenRule: RateLimitRule | null = options.tokenPerMinute > 0 ? { name: 'api-token', limit: options.tokenPerMinute, windowMs: WINDOW_MS } : null;
  const refuse = (res: Response, limit: 'token' | 'ip', result: RateLimitResult): AppError => {
    options.onLimited?.(limit);
    return refusal(res, limit, result);
  };

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (isExempt(req.path)) return next();
    let shown: RateLimitResult | undefined;
    if (ipRule) {
      shown = await options.counter.hit(ipRule, req.ip ?? req.socket.remoteAddress ?? 'unknown');
      setHeaders(res, shown);
      if (!shown.allowed) throw refuse(res, 'ip', shown);
    }
    if (tokenRule) {
      setCallerGate(res, async (auth, gated) => {
        const result = await options.counter.hit(tokenRule, auth.tokenId);
        if (!shown || !result.allowed || result.remaining <= shown.remaining) setHeaders(gated, result);
        if (!result.allowed) throw refuse(gated, 'token', result);
      });
    }
    next();
  };
}
