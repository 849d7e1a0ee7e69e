--[[
  Queues an organization's jobs behind its earlier ones, then dispatches (see
  includes/fair-dispatch.lua).

  Input:
    KEYS[1..7], ARGV[1..8]  the fair dispatch's, as includes/fair-dispatch.lua names them

    ARGV[9]    the organization
    ARGV[10..] job id, payload, job id, payload, ...: a job whose id is waiting already is left
              as it is (an enqueue of a waiting step is a no-op, as BullMQ's own add is)

  Returns:
    the jobs dispatched, as dispatch() returns them: {id1, payload1, id2, payload2, ...}
]]
--- @include "includes/fair-dispatch"
local org = ARGV[9]
local added = 0
for i = 10, #ARGV, 2 do
  if redis.call('HSETNX', jobs, ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('RPUSH', waitingKey(org), ARGV[i])
    added = added + 1
  end
end
if added > 0 and redis.call('SISMEMBER', parked, org) == 0 then ringIn(org) end
return dispatch()
