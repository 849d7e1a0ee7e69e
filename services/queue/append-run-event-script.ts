import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script';
import { nextAppendId, runAppendsKey } from './run-event-keys';

/**
 * Appends events to a run: assigns their sequence numbers, pushes them onto the replay log,
 * renews the log's expiry and publishes them, in one script, so the log order, the seq order and
 * the publish order are the same order even with many writers, and several events of one writer
 * (a step's completion and the run's) cost one round trip.
 *
 * Entries are built by string concatenation, not cjson: cjson would re-encode the event and
 * turn empty arrays into `{}` and reorder keys. Events are already JSON (JSON.stringify).
 */
export const APPEND_RUN_EVENT_LUA = `
--[[
  Append events to a run's replay log and publish them, in order.

  Input:
    KEYS[1]  the run's log (list; index i holds seq i + 1)
    KEYS[2]  the run's appends (hash): append id -> the seq of that append's last event

    ARGV[1]  the run's live pub/sub channel
    ARGV[2]  expiry in seconds of both keys, renewed on every append
    ARGV[3]  the run's run.started event, JSON-encoded: pushed first when the log is empty, so
             it is seq 1 whoever appends first (the reaper may enqueue a step of a run just
             stored, before its starter appends run.started); '' for none
    ARGV[4]  this append's id, unique to the call ('' for none): an append whose id is in
             KEYS[2] already ran, and running it again changes nothing (the same command sent
             again after its reply was lost: ioredis resends what a dropped connection left
             unanswered)
    ARGV[5..] the events, each JSON-encoded (none: only open the log)

  Output:
    the sequence number of the last event in the log (1 for a run's first event); for an
    append that already ran, that append's

  Events:
    PUBLISH ARGV[1] '{"seq":<seq>,"at":<ms>,"event":<event>}' per event, where <ms> is the
    append's time by Redis' clock (epoch milliseconds; one clock for every writer and reader,
    for the event delivery lag metric)
]]
local id = ARGV[4]
if id ~= '' then
  local done = redis.call('HGET', KEYS[2], id)
  if done then return tonumber(done) end
end
local seq = redis.call('LLEN', KEYS[1])
local time = redis.call('TIME')
local at = string.format('%d', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
local function push(json)
  seq = seq + 1
  local entry = '{"seq":' .. string.format('%d', seq) .. ',"at":' .. at .. ',"event":' .. json .. '}'
  redis.call('RPUSH', KEYS[1], entry)
  redis.call('PUBLISH', ARGV[1], entry)
end
if seq == 0 and ARGV[3] ~= '' then push(ARGV[3]) end
for i = 5, #ARGV do push(ARGV[i]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
if id ~= '' then
  redis.call('HSET', KEYS[2], id, seq)
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return seq
`;

const APPEND = new RedisScript(APPEND_RUN_EVENT_LUA);

/**
 * Runs the append script (by its SHA; see `RedisScript`); resolves to the last event's seq.
 * `openerJson`: the run's `run.started`, pushed first if the log is empty ('' for none). With no
 * events there is nothing to append twice, so the append goes without an id.
 */
export async function appendRunEventScript(redis: Redis, logKey: string, channel: string, openerJson: string, eventJsons: readonly string[], ttlSeconds: number): Promise<number> {
  const appendId = eventJsons.length > 0 ? nextAppendId() : '';
  return Number(await APPEND.run(redis, [logKey, runAppendsKey(logKey)], [channel, String(ttlSeconds), openerJson, appendId, ...eventJsons]));
}
