import { Redis, type RedisOptions } from 'ioredis';

/**
 * A Redis connection for BullMQ and the event bus. BullMQ workers need
 * `maxRetriesPerRequest: null` (blocking commands must not be retried into errors).
 */
export function createRedisConnection(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false, ...options });
}

/**
 * The connection a process puts in subscriber mode (the event bus's `subscriber`). Without the
 * ready check: ioredis checks with `INFO`, and a Redis still loading its data after a restart
 * makes it check again later; a SUBSCRIBE sent in between (allowed while loading) puts the
 * connection in subscriber mode, the next `INFO` is refused ("Connection in subscriber mode"),
 * and ioredis fails every queued command with that error. Subscribing needs no loaded data;
 * the log reads that follow go over the command connection, which keeps its ready check.
 */
export function createRedisSubscriber(url: string, options: RedisOptions = {}): Redis {
  return createRedisConnection(url, { ...options, enableReadyCheck: false });
}
