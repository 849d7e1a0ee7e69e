--[[
  Gives back what a granted ticket holds, then grants what that allows (see
  includes/provider-limit.lua; the owners of the tickets granted hear of it by PUBLISH, the
  caller too).

  Input:
    KEYS[1..7], ARGV[1..7]  as includes/provider-limit.lua names them
    ARGV[8]   the ticket id
    ARGV[9]   1: it holds a call slot, freed now
    ARGV[10]  tokens given back (its worst case less its usage; the bucket stays at most full)
    ARGV[11]  1: its request is given back too (a grant whose caller had gone: nothing was sent)

  Returns:
    what blocks the queue's head now ('' nothing)
]]
--- @include "includes/provider-limit"
if ARGV[9] == '1' then redis.call('ZREM', leases, ARGV[8]) end
local tokensBack = tonumber(ARGV[10])
if tpm > 0 and tokensBack > 0 then tlevel = math.min(tcap, tlevel + tokensBack) end
if rpm > 0 and ARGV[11] == '1' then rlevel = math.min(rcap, rlevel + 1) end
local _, blocked = grant()
finish(blocked, '')
return blocked
