--[[
  Append events to a run's replay log and publish them, in order (see
  includes/append-event.lua), adding the mount node's step.started before the first inner step
  starts and its step.completed after the last inner step completes.

  Input:
    KEYS[1]  the run's log (list; index i holds seq i + 1)
    KEYS[2]  the run's mount tally (hash): <mount>:t0 (ms of the first inner start),
             <mount>:n (inner steps completed), <mount>:micros (their cost), <mount>:done:<inner>
    KEYS[3]  the run's appends (hash): append id -> the seq of that append's last event

    ARGV[1]  the run's live pub/sub channel
    ARGV[2]  expiry in seconds of the keys, renewed on every append
    ARGV[3]  the run's run.started event, JSON-encoded, pushed first when the log is empty;
             '' for none
    ARGV[4]  this append's id: one already in KEYS[3] changes nothing
    ARGV[5..] groups of six per event: the event JSON-encoded; the mount node id ('' for an
             event of no mounted step); 'started', 'completed' or '' (other events); the inner
             step id; its cost in micro-USD; the number of the mount's inner steps

  Returns:
    the sequence number of the last event appended (for an append that already ran, that one's)

  Events:
    PUBLISH ARGV[1] '{"seq":<seq>,"at":<ms>,"event":<event>}' per event appended, the mount
    node's own included
]]
--- @include "includes/append-event"
local done = appendedBefore(KEYS[3])
if done then return done end
beginAppend()
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
redis.call('EXPIRE', KEYS[2], ARGV[2])
return endAppend(KEYS[3])
