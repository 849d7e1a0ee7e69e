import type { Redis } from 'ioredis';
import { TokenLimit, type MinuteLimit, type StreamSlots } from './auth/call-limits';
import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';
import type { Metrics } from '../platform/metrics';
import { RateLimiter, StreamLeases } from '../queue';

/** The API's limits, built from the configuration over the process's Redis connection. */
export interface ApiLimits {
  /** Requests per minute of one client address; absent when 0. */
  ipLimit: MinuteLimit | undefined;
  /** Requests per minute of one access token; absent when 0. */
  tokenLimit: TokenLimit | undefined;
  /** Open run streams per organization; absent when 0. */
  streamSlots: StreamSlots | undefined;
  /** Stops renewing stream leases and gives back those still held. */
  close(): Promise<void>;
}

type LimitConfig = Pick<Config, 'redisPrefix' | 'rateLimitTokenPerMinute' | 'rateLimitIpPerMinute' | 'maxOpenStreamsPerOrg'>;

/**
 * Request rate limits (per token, per IP) and open-stream slots per organization, both kept in
 * Redis under the deployment's prefix so that every API replica enforces the same numbers. A
 * limit set to 0 is not built at all. Both fail open when Redis does not answer; that is logged.
 */
export function createApiLimits(config: LimitConfig, redis: Redis, metrics: Metrics, log: Logger): ApiLimits {
  const limited = config.rateLimitTokenPerMinute > 0 || config.rateLimitIpPerMinute > 0;
  const counter = limited
    ? new RateLimiter({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'rate limit not checked (Redis did not answer); request let through') })
    : undefined;
  const leases = config.maxOpenStreamsPerOrg > 0
    ? new StreamLeases({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'open-stream slot not counted (Redis did not answer)') })
    : undefined;
  const onLimited = (limit: 'token' | 'ip' | 'open_streams') => metrics.rateLimited.inc({ limit });
  return {
    ipLimit: counter && config.rateLimitIpPerMinute > 0 ? { counter, perMinute: config.rateLimitIpPerMinute, onLimited } : undefined,
    tokenLimit: counter && config.rateLimitTokenPerMinute > 0 ? new TokenLimit({ counter, perMinute: config.rateLimitTokenPerMinute, onLimited }) : undefined,
    streamSlots: leases && {
      perOrg: config.maxOpenStreamsPerOrg,
      take: (orgId: string) => leases.acquire(orgId, config.maxOpenStreamsPerOrg),
      onRefused: () => metrics.rateLimited.inc({ limit: 'open_streams' }),
    },
    close: async () => leases?.close(),
  };
}
