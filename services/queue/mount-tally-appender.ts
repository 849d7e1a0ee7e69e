import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script';
import { nextAppendId, runAppendsKey, runEventKeys, runStartedJson } from './run-event-keys';

/**
 * Appends events of mounted workflows' steps and keeps each mount node's tally (when its first
 * inner step started, which inner steps completed, their cost), in one script with the append:
 * the mount node's own `step.started` lands before the first inner step's progress, and its
 * `step.completed` after the last one's, whichever workers append them, in whatever order.
 * Appending works as `APPEND_RUN_EVENT_LUA` does (same log, seq and channel).
 */
export const APPEND_MOUNT_EVENTS_LUA = `
--[[
  Append events to a run's replay log and publish them, in order, adding the mount node's
  step.started before the first inner step starts and its step.completed after the last
  inner step completes.

  Input:
    KEYS[1]  the run's log (list; index i holds seq i + 1)
    KEYS[2]  the run's mount tally (hash): <mount>:t0 (ms of the first inner start),
             <mount>:n (inner steps completed), <mount>:micros (their cost), <mount>:done:<inner>
    KEYS[3]  the run's appends (hash), as in APPEND_RUN_EVENT_LUA

    ARGV[1]  the run's live pub/sub channel
    ARGV[2]  expiry in seconds of the keys, renewed on every append
    ARGV[3]  the run's run.started event, pushed first when the log is empty (as in
             APPEND_RUN_EVENT_LUA); '' for none
    ARGV[4]  this append's id: one already in KEYS[3] changes nothing (as in APPEND_RUN_EVENT_LUA)
    ARGV[5..] groups of six per event: the event JSON-encoded; the mount node id ('' for an
             event of no mounted step); 'started', 'completed' or '' (other events); the inner
             step id; its cost in micro-USD; the number of the mount's inner steps

  Output:
    the sequence number of the last event appended (for an append that already ran, that one's)

  Events:
    PUBLISH ARGV[1] '{"seq":<seq>,"at":<ms>,"event":<event>}' per event appended (<ms>: the
    append's time by Redis' clock, as in APPEND_RUN_EVENT_LUA)
]]
local id = ARGV[4]
local done = redis.call('HGET', KEYS[3], id)
if done then return tonumber(done) end
local seq = redis.call('LLEN', KEYS[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local at = string.format('%d', now)
local function push(json)
  seq = seq + 1
  local entry = '{"seq":' .. string.format('%d', seq) .. ',"at":' .. at .. ',"event":' .. json .. '}'
  redis.call('RPUSH', KEYS[1], entry)
  redis.call('PUBLISH', ARGV[1], entry)
end
if seq == 0 and ARGV[3] ~= '' then push(ARGV[3]) end
for i = 5, #ARGV, 6 do
  local event, mount, phase, inner = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local cost, total = tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5])
  if phase == 'started' and redis.call('HSETNX', KEYS[2], mount .. ':t0', now) == 1 then
    push('{"type":"step.started","nodeId":' .. cjson.encode(mount) .. '}')
  end
  push(event)
  if phase == 'completed' and redis.call('HSETNX', KEYS[2], mount .. ':done:' .. inner, 1) == 1 then
    local micros = redis.call('HINCRBY', KEYS[2], mount .. ':micros', cost)
    if redis.call('HINCRBY', KEYS[2], mount .. ':n', 1) == total then
      local t0 = tonumber(redis.call('HGET', KEYS[2], mount .. ':t0') or now)
      local usd = string.format('%d.%06d', math.floor(micros / 1000000), micros % 1000000)
      push('{"type":"step.completed","nodeId":' .. cjson.encode(mount) .. ',"usage":{"costUsd":' .. usd .. ',"ms":' .. string.format('%d', now - t0) .. '}}')
    end
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], id, seq)
redis.call('EXPIRE', KEYS[3], ARGV[2])
return seq
`;

const APPEND_MOUNT_EVENTS = new RedisScript(APPEND_MOUNT_EVENTS_LUA);

/** One event of a mounted step and what it tells its mount node's tally. */
export interface MountTallyEntry {
  /** The event as the stream shows it. */
  event: unknown;
  /** Null for an event that changes no tally (another node's, or progress). */
  mark: { mountId: string; innerId: string; phase: 'started' | 'completed'; costMicros: number; innerSteps: number } | null;
}

/** Appends mounted steps' events with their mount nodes' tally (see `APPEND_MOUNT_EVENTS_LUA`). */
export class MountTallyAppender {
  constructor(private readonly options: { redis: Redis; prefix: string; logTtlSeconds: number }) {}

  async appendTallied(runId: string, entries: readonly MountTallyEntry[]): Promise<number> {
    const { log, channel } = runEventKeys(this.options.prefix, runId);
    const args: string[] = [channel, String(this.options.logTtlSeconds), runStartedJson(runId), nextAppendId()];
    for (const { event, mark } of entries) {
      args.push(JSON.stringify(event), mark?.mountId ?? '', mark?.phase ?? '', mark?.innerId ?? '', String(mark?.costMicros ?? 0), String(mark?.innerSteps ?? 0));
    }
    return Number(await APPEND_MOUNT_EVENTS.run(this.options.redis, [log, `${log}:mounts`, runAppendsKey(log)], args));
  }
}
