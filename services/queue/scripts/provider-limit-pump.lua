--[[
  One process's turn at a limit key: marks it alive, withdraws its abandoned tickets, queues its
  new ones, grants what the budgets allow (anyone's), and collects its own grants (see
  includes/provider-limit.lua).

  Input:
    KEYS[1..7], ARGV[1..7]  as includes/provider-limit.lua names them
    ARGV[8]   tickets the caller believes are queued here already (0: none)
    ARGV[9]   n: tickets withdrawn (their requests aborted)
    ARGV[10..9+n]  their ids
    ARGV[10+n]     m: grants the caller received in its last reply (acknowledged: forgotten here)
    ARGV[11+n..10+n+m]  their ids
    ARGV[11+n+m..] new tickets: id, org, tokens, lease (1 or 0), id, org, ...; an id queued
                   already keeps its place

  Returns:
    {1} when the caller's tickets are unknown here (its alive mark was gone: Redis lost its state,
        or the caller was taken for dead): it must queue them all again; nothing else was done
    {0, wait ms (-1: queue empty), blocked by ('' none), requests left, tokens left, calls left
     ('' where no such limit), granted ticket id of the caller...}: every grant of the caller not
     yet acknowledged, so a reply lost on its way (or a call run twice, as a client resends an
     unanswered command after a reconnect) loses no grant; they expire after leaseMs
]]
--- @include "includes/provider-limit"
local alive = aliveKey(caller)
local known = redis.call('EXISTS', alive) == 1
redis.call('SET', alive, '1', 'PX', leaseMs)
if tonumber(ARGV[8]) > 0 and not known then return {1} end

local mine = grantedKey(caller)
local withdrawn = tonumber(ARGV[9])
for i = 10, 9 + withdrawn do
  local raw = redis.call('HGET', tickets, ARGV[i])
  if raw then leave(ARGV[i], cjson.decode(raw).o) end
end
local acked = tonumber(ARGV[10 + withdrawn])
for i = 11 + withdrawn, 10 + withdrawn + acked do redis.call('SREM', mine, ARGV[i]) end
for i = 11 + withdrawn + acked, #ARGV, 4 do
  local id, org = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', tickets, id) == 0 then
    local score = math.max(tonumber(redis.call('HGET', orgs, org) or '0'), vclock) + 1
    redis.call('HSET', orgs, org, score)
    redis.call('HINCRBY', waits, org, 1)
    redis.call('ZADD', queue, score, id)
    redis.call('HSET', tickets, id, cjson.encode({ p = caller, o = org, t = tonumber(ARGV[i + 2]), l = tonumber(ARGV[i + 3]) }))
  end
end

local wait, blocked = grant()
finish(blocked, caller)
local reply = { 0, wait, blocked, remaining(rpm, rlevel), remaining(tpm, tlevel), '' }
if calls > 0 then reply[6] = tostring(calls - callsHeld()) end
for _, id in ipairs(redis.call('SMEMBERS', mine)) do reply[#reply + 1] = id end
if #reply > 6 then redis.call('PEXPIRE', mine, leaseMs) end
return reply
