import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * Appends one event to a run: assigns its sequence number, pushes it onto the replay log,
 * renews the log's expiry and publishes it, in one script, so the log order, the seq order and
 * the publish order are the same order even with many writers.
 *
 * The entry is built by string concatenation, not cjson: cjson would re-encode the event and
 * turn empty arrays into `{}` and reorder keys. ARGV[2] is already JSON (JSON.stringify).
 */
export const APPEND_RUN_EVENT_LUA = `
--[[
  Append an event to a run's replay log and publish it.

  Input:
    KEYS[1]  the run's log (list; index i holds seq i + 1)

    ARGV[1]  the run's live pub/sub channel
    ARGV[2]  the event, JSON-encoded
    ARGV[3]  log expiry in seconds, renewed on every append

  Output:
    the event's sequence number (1 for the first event of a run)

  Events:
    PUBLISH ARGV[1] '{"seq":<seq>,"event":<ARGV[2]>}'
]]
local seq = redis.call('LLEN', KEYS[1]) + 1
local entry = '{"seq":' .. string.format('%d', seq) .. ',"event":' .. ARGV[2] .. '}'
redis.call('RPUSH', KEYS[1], entry)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[1], entry)
return seq
`;

const SHA = createHash('sha1').update(APPEND_RUN_EVENT_LUA).digest('hex');

/**
 * Runs the append script by its SHA, loading it with EVAL when Redis does not know it yet
 * (first call, or after a restart or SCRIPT FLUSH). `NOSCRIPT` is the error code Redis puts
 * first in that reply; it is protocol, not message text.
 */
export async function appendRunEventScript(redis: Redis, logKey: string, channel: string, eventJson: string, ttlSeconds: number): Promise<number> {
  const args = [logKey, channel, eventJson, String(ttlSeconds)];
  try {
    return Number(await redis.evalsha(SHA, 1, ...args));
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return Number(await redis.eval(APPEND_RUN_EVENT_LUA, 1, ...args));
  }
}
