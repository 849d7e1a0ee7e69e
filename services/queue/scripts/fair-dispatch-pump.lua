--[[
  Dispatches (see includes/fair-dispatch.lua), on a timer. With reconcile, first prunes every
  parked organization and brings back into the ring those with room again: releases lost with a
  crashed worker never park one for good, nor hold the batch lanes' count of dispatched jobs.

  Input:
    KEYS[1..7], ARGV[1..8]  the fair dispatch's, as includes/fair-dispatch.lua names them

    ARGV[9]  1: reconcile first; 0: not

  Returns:
    the jobs dispatched, as dispatch() returns them: {id1, payload1, id2, payload2, ...}
]]
--- @include "includes/fair-dispatch"
if ARGV[9] == '1' then
  pruneKey(lowRunning)
  for _, org in ipairs(redis.call('SMEMBERS', parked)) do
    if redis.call('LLEN', waitingKey(org)) == 0 then
      redis.call('SREM', parked, org)
    elseif not full(org) then
      ringIn(org)
    end
  end
end
return dispatch()
