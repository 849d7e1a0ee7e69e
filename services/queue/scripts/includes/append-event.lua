--[[
  Appending to a run's event log, for every script that appends events: the append's id, the
  sequence numbers, the entry format, the publish and the expiries. So the log order, the seq
  order and the publish order are one order whoever appends, and one format whatever appends.

  Uses:
    KEYS[1]  the run's log (list; index i holds seq i + 1)

    ARGV[1]  the run's live pub/sub channel
    ARGV[2]  expiry in seconds of the log and the appends hash, renewed on every append
    ARGV[3]  the run's run.started event, JSON-encoded: pushed first when the log is empty, so
             it is seq 1 whoever appends first (the reaper may enqueue a step of a run just
             stored, before its starter appends run.started); '' for none
    ARGV[4]  this append's id, unique to the call ('' for none): an append whose id is in the
             run's appends hash already ran, and running it again changes nothing (the same
             command sent again after its reply was lost: ioredis resends what a dropped
             connection left unanswered)

  The run's appends hash (append id -> the seq of that append's last event) is passed to
  appendedBefore() and endAppend(): its KEYS index differs between scripts.

  Entries are built by string concatenation, not cjson: cjson would re-encode the event, turn
  empty arrays into {} and reorder keys. Events are already JSON (JSON.stringify).

  Events:
    PUBLISH ARGV[1] '{"seq":<seq>,"at":<ms>,"event":<event>}' per event pushed, where <ms> is the
    append's time by Redis' clock (epoch milliseconds; one clock for every writer and reader,
    for the event delivery lag metric)
]]
local appendId = ARGV[4]
-- The log's last seq, and the append's time (ms, a number, and as the entries write it).
local seq, now, at

-- The seq of the last event of the append with this id, if it ran already; else nil.
local function appendedBefore(appends)
  if appendId == '' then return nil end
  local done = redis.call('HGET', appends, appendId)
  if done then return tonumber(done) end
  return nil
end

-- Appends one event (JSON-encoded) with the next seq, and publishes it.
local function push(json)
  seq = seq + 1
  local entry = '{"seq":' .. string.format('%d', seq) .. ',"at":' .. at .. ',"event":' .. json .. '}'
  redis.call('RPUSH', KEYS[1], entry)
  redis.call('PUBLISH', ARGV[1], entry)
end

-- Reads the log's last seq and Redis' clock; opens an empty log with ARGV[3].
local function beginAppend()
  seq = redis.call('LLEN', KEYS[1])
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  at = string.format('%d', now)
  if seq == 0 and ARGV[3] ~= '' then push(ARGV[3]) end
end

-- Renews the log's expiry and records this append under its id; returns the last event's seq.
local function endAppend(appends)
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  if appendId ~= '' then
    redis.call('HSET', appends, appendId, seq)
    redis.call('EXPIRE', appends, ARGV[2])
  end
  return seq
end
