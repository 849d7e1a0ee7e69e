--[[
  Dispatched jobs ended (completed, or failed for good): their organizations' slots are free; a
  parked organization with jobs waiting and room again goes back into the ring. Then dispatches
  (see includes/fair-dispatch.lua).

  Input:
    KEYS[1..7], ARGV[1..8]  the fair dispatch's, as includes/fair-dispatch.lua names them

    ARGV[9..]  organization, job id, organization, job id, ...

  Returns:
    the jobs dispatched, as dispatch() returns them: {id1, payload1, id2, payload2, ...}
]]
--- @include "includes/fair-dispatch"
for i = 9, #ARGV, 2 do
  redis.call('ZREM', runningKey(ARGV[i]), ARGV[i + 1])
  if isBatchLane(ARGV[i]) then redis.call('ZREM', lowRunning, ARGV[i + 1]) end
end
for i = 9, #ARGV, 2 do
  local org = ARGV[i]
  if redis.call('SISMEMBER', parked, org) == 1 and not full(org) then
    if redis.call('LLEN', waitingKey(org)) > 0 then ringIn(org) else redis.call('SREM', parked, org) end
  end
end
return dispatch()
