import { createHash } from 'node:crypto';
import { settleWithin } from '../platform/bounded-wait';
import type { Redis } from 'ioredis';
import { readLuaScript } from './lua-script-files';

/**
 * A Lua script run by its SHA (EVALSHA: the script's text crosses the network once per Redis
 * server, not once per call), loaded with EVAL when Redis does not know it yet (first call, or
 * after a restart or SCRIPT FLUSH). `NOSCRIPT` is the error code Redis puts first in that
 * reply; it is protocol, not message text.
 */
export class RedisScript {
  readonly sha: string;

  /** `name`: the script's file name without `.lua`, for logs and timings; `lua`: its text. */
  constructor(
    readonly name: string,
    readonly lua: string,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** The script of `scripts/<name>.lua`, its includes resolved; read when the module that runs it loads. */
  static fromFile(name: string): RedisScript {
    return new RedisScript(name, readLuaScript(name));
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const params = [...keys, ...args.map(String)];
    try {
      return await redis.evalsha(this.sha, keys.length, ...params);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.lua, keys.length, ...params);
    }
  }
}

/**
 * `promise`, or a rejection after `ms` (its eventual result is then ignored). For callers that
 * fail open: commands on a connection with `maxRetriesPerRequest: null` wait for Redis forever.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return settleWithin(promise, ms, () => new Error(`${what}: no answer from Redis within ${ms} ms`));
}
