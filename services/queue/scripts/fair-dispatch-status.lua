--[[
  One organization's place in the queue, its dispatched jobs that are gone pruned first (as
  prune() does, whatever its limit). Dispatches nothing.

  Input:
    KEYS[1..7], ARGV[1..8]  the fair dispatch's, as includes/fair-dispatch.lua names them

    ARGV[9]  the organization

  Returns:
    {waiting, dispatched, own limit or -1, organizations with jobs waiting}
]]
--- @include "includes/fair-dispatch"
local org = ARGV[9]
prune(org)
local own = redis.call('HGET', limits, org)
return {redis.call('LLEN', waitingKey(org)), redis.call('ZCARD', runningKey(org)), own and tonumber(own) or -1, redis.call('SCARD', ringed) + redis.call('SCARD', lowRinged) + redis.call('SCARD', parked)}
