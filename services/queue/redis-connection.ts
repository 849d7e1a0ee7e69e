import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { redisCalls, type RedisCall } from '../platform/call-channels';
import { corkForTurn } from '../platform/socket-cork';

/** Commands that wait for data by design (or switch to pub/sub): their time is not latency. */
export const WAITING_COMMANDS: ReadonlySet<string> = new Set(['blpop', 'brpop', 'brpoplpush', 'blmove', 'bzpopmin', 'bzpopmax', 'bzmpop', 'blmpop', 'xread', 'xreadgroup', 'subscribe', 'psubscribe', 'ssubscribe', 'unsubscribe', 'punsubscribe', 'sunsubscribe', 'monitor', 'wait', 'waitaof']);

/**
 * The one hook on every command the connection sends: times it for metrics
 * (`svc:redis.command`), by command name, except the waiting ones (a command's promise settles
 * when Redis answers, or the connection gives up on it), and corks the socket for the turn so
 * that the turn's commands leave in one write.
 */
function instrumented(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis) as (...args: unknown[]) => unknown;
  // Every argument passes through: a Cluster's sendCommand takes a third (the node).
  redis.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
    const [command] = args;
    const name = redisCalls.hasSubscribers ? command.name.toLowerCase() : '';
    if (name !== '' && !WAITING_COMMANDS.has(name)) {
      const started = performance.now();
      const report = (ok: boolean) => redisCalls.publish({ command: name, seconds: (performance.now() - started) / 1000, ok } satisfies RedisCall);
      command.promise.then(
        () => report(true),
        () => report(false),
      );
    }
    // Commands sent in one turn leave together (ioredis writes each on its own otherwise).
    if (redis.status === 'ready' && redis.stream) corkForTurn(redis.stream);
    return send(...args);
  };
  return redis;
}

/** Where Redis is: a server's URL, or (`cluster`) one node of a Redis Cluster (`REDIS_CLUSTER`). */
export interface RedisTarget {
  url: string;
  cluster: boolean;
}

/** The configured target (`REDIS_URL`, `REDIS_CLUSTER`). */
export function redisTargetOf(config: { redisUrl: string; redisCluster: boolean }): RedisTarget {
  return { url: config.redisUrl, cluster: config.redisCluster };
}

/**
 * A Redis connection for BullMQ and the event bus. BullMQ workers need
 * `maxRetriesPerRequest: null` (blocking commands must not be retried into errors).
 *
 * For a cluster, an ioredis `Cluster` that discovers the nodes from the one named, typed as a
 * `Redis`: it answers the same commands, and every key of ours sits in the one slot the prefix's
 * hash tag picks (config.ts), so no command or script spans slots.
 */
export function createRedisConnection(target: RedisTarget | string, options: RedisOptions = {}): Redis {
  const { url, cluster } = typeof target === 'string' ? { url: target, cluster: false } : target;
  const redisOptions: RedisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false, ...options };
  if (!cluster) return instrumented(new Redis(url, redisOptions));
  const seed = new URL(url);
  const auth = { ...(seed.username ? { username: decodeURIComponent(seed.username) } : {}), ...(seed.password ? { password: decodeURIComponent(seed.password) } : {}) };
  const node = new Cluster([{ host: seed.hostname, port: Number(seed.port || 6379) }], {
    enableReadyCheck: redisOptions.enableReadyCheck,
    lazyConnect: false,
    redisOptions: { ...redisOptions, ...auth, ...(seed.protocol === 'rediss:' ? { tls: {} } : {}) },
  });
  return instrumented(node as unknown as Redis);
}

/**
 * The connection a process puts in subscriber mode (the event bus's `subscriber`). Without the
 * ready check: ioredis checks with `INFO`, and a Redis still loading its data after a restart
 * makes it check again later; a SUBSCRIBE sent in between (allowed while loading) puts the
 * connection in subscriber mode, the next `INFO` is refused ("Connection in subscriber mode"),
 * and ioredis fails every queued command with that error. Subscribing needs no loaded data;
 * the log reads that follow go over the command connection, which keeps its ready check.
 * `onError` is told of the connection's errors.
 */
export function createRedisSubscriber(target: RedisTarget | string, onError: (err: Error) => void, options: RedisOptions = {}): Redis {
  const subscriber = createRedisConnection(target, { ...options, enableReadyCheck: false });
  // Its errors (a refused reconnect, every retry of an outage) go to the caller's log: with no
  // listener, ioredis writes each to the console instead. Nothing else listens on this connection.
  subscriber.on('error', onError);
  return subscriber;
}
