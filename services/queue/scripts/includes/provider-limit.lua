--[[
  The part the provider-limit scripts that grant share: one limit key's keys, its two buckets,
  and grant(), which hands the queue's head tickets their turn while the budgets allow.

  Keys (one hash slot: every name starts with the deployment's prefix, a hash tag under a Redis
  Cluster; the per-process keys built here from ARGV[1] share it):
    KEYS[1]  state (hash): r, k = the request and token buckets' levels; at = when they were
             last filled, ms; v = the virtual clock (score of the latest ticket granted); b = what
             blocked the head last ('' nothing, requests, tokens, calls, paused)
    KEYS[2]  queue: waiting ticket ids scored by virtual time (sorted set)
    KEYS[3]  tickets: ticket id -> {p = owner process, o = org, t = tokens, l = 1 when it takes a
             call slot} (hash of JSON)
    KEYS[4]  leases: held call slots, ticket id -> expiry, ms (sorted set)
    KEYS[5]  orgs: org -> virtual time of its latest waiting ticket (hash)
    KEYS[6]  waits: org -> its tickets waiting (hash; for queue.get)
    KEYS[7]  pause: the provider's pause, until ms (string with a PX expiry)
    <ARGV[1]>:a:<process>  the process is alive and waits here (string, PX leaseMs)
    <ARGV[1]>:g:<process>  its tickets granted and not yet collected by it (set)
    <ARGV[1]>:lr  the pace learnt from the provider's 429s: r = requests per minute when set,
             at = when, ms; hold = until when another 429 does not halve it; s, n, last = the
             grants of second s, and of the second before (hash; expires ten minutes after the
             last 429)

  Common arguments:
    ARGV[1]  the key's base name (every key above is it plus a suffix)
    ARGV[2]  the processes' channel prefix: a grant is announced on it plus the owner's id
    ARGV[3]  requests per minute (0: no limit); a pace learnt from 429s (<ARGV[1]>:lr) lowers it
    ARGV[4]  tokens per minute (0: no limit)
    ARGV[5]  concurrent calls (0: no limit)
    ARGV[6]  leaseMs: life of a call slot or an alive mark not renewed
    ARGV[7]  the calling process's id

  Why these buckets: each rate is a token bucket filled continuously on Redis' clock. Requests'
  capacity is 1/50 s of the rate (at least 1): a provider then sees at most rate x T + capacity
  requests in any T seconds. Measured (two processes, 1,000 requests each queued at once, 3000
  a minute, times taken where the grants resolve): at most 50 in any second, all drained in 41.8 s;
  with 1/40 s (1.25) it was 53 in a second, above the benchmark's bound of 52, because a grant
  reaches its request a little late and the spare fraction lets two go out together.
  Tokens' capacity is 1/20 s of the rate (at least 1): a request counts its worst case, and one
  whose worst case is above the capacity is granted once the bucket is full and takes the level
  below zero (debt), so it waits its turn but is never stuck; release() corrects with the real
  usage. A bigger burst would let a queue drained by two processes spike at the provider.

  Why virtual time: an org's next ticket gets max(org's latest score, the key's clock) + 1 and the
  lowest score goes first (weighted fair queuing, equal weights): an org that queued a thousand
  takes every other turn with one that queued later, not the first thousand. An org with nothing
  waiting is forgotten (its score is below the clock, so nothing changes).

  A head ticket whose owner's alive mark lapsed (its process died) is dropped, not granted.
  Granted tickets go into their owner's set and the owner hears of them by PUBLISH (the caller
  collects its own in the reply), so a grant reaches its process at once, never on a poll.
]]
local state, queue, tickets, leases, orgs, waits, pauseKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local base, channelPrefix = ARGV[1], ARGV[2]
local rpm, tpm, calls, leaseMs = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local caller = ARGV[7]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- A pace learnt from the provider's 429s (provider-limit-pause.lua): the requests per minute it
-- had when last set, grown by LEARNT_GROWTH a second since then. It binds while it is below the
-- stated limit (or there is none), so a fleet that met a 429 sends at the pace the provider took,
-- then probes upwards until the next 429 halves it again (additive probing would take minutes to
-- find a big provider's pace; halving and growing by half a second keeps the 429s to a few per
-- episode). It expires ten minutes after its last 429.
local LEARNT_GROWTH = 1.5
local learntKey = base .. ':lr'
local learnt = redis.call('HMGET', learntKey, 'r', 'at')
if learnt[1] then
  local grown = tonumber(learnt[1]) * math.pow(LEARNT_GROWTH, math.max(0, now - tonumber(learnt[2])) / 1000)
  if rpm <= 0 or grown < rpm then rpm = grown end
else
  learntKey = nil
end
-- Grants counted per second while a pace is learnt: the pace the fleet really sent at, which the
-- next 429 halves (not the pace grown meanwhile, which nothing may have used).
local function countGrant()
  if not learntKey then return end
  local second = math.floor(now / 1000)
  local counted = redis.call('HMGET', learntKey, 's', 'n')
  local at = tonumber(counted[1])
  if at == second then
    redis.call('HINCRBY', learntKey, 'n', 1)
  else
    redis.call('HSET', learntKey, 's', second, 'n', 1, 'last', (at == second - 1) and tonumber(counted[2]) or 0)
  end
end

local rrate, trate = rpm / 60000, tpm / 60000
local rcap, tcap = math.max(1, rpm / 3000), math.max(1, tpm / 1200)
local saved = redis.call('HMGET', state, 'r', 'k', 'at', 'v')
local rlevel, tlevel = tonumber(saved[1]) or rcap, tonumber(saved[2]) or tcap
local at, vclock = tonumber(saved[3]) or now, tonumber(saved[4]) or 0
-- A clock behind the last fill (a failover) fills nothing until it catches up.
if now > at then
  rlevel = math.min(rcap, rlevel + (now - at) * rrate)
  tlevel = math.min(tcap, tlevel + (now - at) * trate)
  at = now
end

local function aliveKey(p) return base .. ':a:' .. p end
local function grantedKey(p) return base .. ':g:' .. p end

-- A ticket leaves the queue (granted, withdrawn or dropped); an org left with none is forgotten.
local function leave(id, org)
  redis.call('ZREM', queue, id)
  redis.call('HDEL', tickets, id)
  if redis.call('HINCRBY', waits, org, -1) <= 0 then
    redis.call('HDEL', waits, org)
    redis.call('HDEL', orgs, org)
  end
end

local function callsHeld()
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  return redis.call('ZCARD', leases)
end

-- Processes that were granted tickets in this call.
local owners = {}

-- Grants head tickets while every budget allows. Returns how long until the head could be
-- granted (ms; -1: the queue is empty) and what blocks it ('' nothing).
local function grant()
  local pausedUntil = tonumber(redis.call('GET', pauseKey) or '0')
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
    if #head == 0 then return -1, '' end
    local id, score = head[1], tonumber(head[2])
    local raw = redis.call('HGET', tickets, id)
    if not raw then
      redis.call('ZREM', queue, id)
    else
      local ticket = cjson.decode(raw)
      if redis.call('EXISTS', aliveKey(ticket.p)) == 0 then
        leave(id, ticket.o)
      else
        if pausedUntil > now then return pausedUntil - now, 'paused' end
        if rpm > 0 and rlevel < 1 then return math.ceil((1 - rlevel) / rrate), 'requests' end
        if tpm > 0 and ticket.t > 0 then
          local need = math.min(ticket.t, tcap)
          if tlevel < need then return math.ceil((need - tlevel) / trate), 'tokens' end
        end
        if calls > 0 and ticket.l == 1 and callsHeld() >= calls then
          local first = redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')
          return math.max(1, tonumber(first[2]) - now), 'calls'
        end
        if rpm > 0 then rlevel = rlevel - 1 end
        countGrant()
        if tpm > 0 then tlevel = tlevel - ticket.t end
        if calls > 0 and ticket.l == 1 then redis.call('ZADD', leases, now + leaseMs, id) end
        if score > vclock then vclock = score end
        leave(id, ticket.o)
        redis.call('SADD', grantedKey(ticket.p), id)
        redis.call('PEXPIRE', grantedKey(ticket.p), leaseMs)
        owners[ticket.p] = true
      end
    end
  end
end

-- Stores the buckets and the clock, and tells each owner but `skip` of its grants.
local function finish(blocked, skip)
  redis.call('HSET', state, 'r', rlevel, 'k', tlevel, 'at', at, 'v', vclock, 'b', blocked)
  for p in pairs(owners) do
    if p ~= skip then redis.call('PUBLISH', channelPrefix .. p, base) end
  end
end

local function remaining(limit, level)
  if limit > 0 then return tostring(math.floor(level)) end
  return ''
end
