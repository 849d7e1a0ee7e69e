import { Redis, type RedisOptions } from 'ioredis';

/**
 * A Redis connection for BullMQ and the event bus. BullMQ workers need
 * `maxRetriesPerRequest: null` (blocking commands must not be retried into errors).
 */
export function createRedisConnection(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false, ...options });
}
