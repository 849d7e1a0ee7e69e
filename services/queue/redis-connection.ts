import { Redis, type RedisOptions } from 'ioredis';
import { redisCalls, type RedisCall } from '../platform/call-channels';

/** Commands that wait for data by design (or switch to pub/sub): their time is not latency. */
const WAITING_COMMANDS = new Set(['blpop', 'brpop', 'brpoplpush', 'blmove', 'bzpopmin', 'bzpopmax', 'bzmpop', 'blmpop', 'xread', 'xreadgroup', 'subscribe', 'psubscribe', 'ssubscribe', 'unsubscribe', 'punsubscribe', 'sunsubscribe', 'monitor', 'wait', 'waitaof']);

/**
 * Times every command the connection sends for metrics (`svc:redis.command`), by command name,
 * except the waiting ones. A command's promise settles when Redis answers (or the connection
 * gives up on it).
 */
function timed(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    const name = command.name.toLowerCase();
    if (redisCalls.hasSubscribers && !WAITING_COMMANDS.has(name)) {
      const started = performance.now();
      const report = (ok: boolean) => redisCalls.publish({ command: name, seconds: (performance.now() - started) / 1000, ok } satisfies RedisCall);
      command.promise.then(
        () => report(true),
        () => report(false),
      );
    }
    return send(command, stream);
  };
  return redis;
}

/**
 * A Redis connection for BullMQ and the event bus. BullMQ workers need
 * `maxRetriesPerRequest: null` (blocking commands must not be retried into errors).
 */
export function createRedisConnection(url: string, options: RedisOptions = {}): Redis {
  return timed(new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false, ...options }));
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
