--[[
  The part every fair-dispatch script shares: its keys, the clock, and dispatch(), which moves
  waiting jobs towards BullMQ one organization at a time, round robin.

  Keys (one hash slot: every name starts with the deployment's prefix, a hash tag under a Redis
  Cluster, so the per-organization keys built here share the slot of those passed in):
    KEYS[1]  ring: organizations with jobs waiting and room to run them, in turn order (list)
    KEYS[2]  ringed: the organizations in the ring (set; the ring holds each at most once)
    KEYS[3]  parked: organizations with jobs waiting at their concurrency limit (set)
    KEYS[4]  jobs: every waiting job's payload, by job id (hash)
    KEYS[5]  BullMQ's wait list of the steps queue (list; read only)
    KEYS[6]  adding: jobs dispatched and not yet in BullMQ's list, job id -> when, ms (sorted
             set; the caller removes each once added, the grace forgets one whose add was lost)
    KEYS[7]  limits: organizations' own concurrency limits, org -> limit (hash; copied from
             Postgres by the workers; an organization without one has ARGV[4])
    <ARGV[1]>:waiting:<org>  the organization's waiting job ids, oldest first (list)
    <ARGV[1]>:running:<org>  its dispatched jobs: job id -> when dispatched, ms (sorted set)
    <KEYS[1]>:batch, <KEYS[2]>:batch  the batch lane's ring and its members: organizations'
             batch rows (an "organization" named ~b:<org>; docs/scheduling.md, The batch lane)
             take turns here, and only when the ring of interactive work is empty
    BullMQ's prioritized set (KEYS[5] with :prioritized for :wait; read only): batch jobs wait
             there, behind every job of the wait list
    <KEYS[1]>:busy  present while interactive work is under way: set on each interactive
             dispatch, expiring ARGV[7] ms later (string)
    <KEYS[1]>:batch:running  every batch lane's dispatched jobs: job id -> when dispatched, ms
             (sorted set; what ARGV[6] bounds)
    <KEYS[1]>:batch:next  while interactive work is under way, when the next batch job may be
             dispatched, ms (string, expiring; what ARGV[8] spaces)

  Common arguments:
    ARGV[1]  the fair-dispatch key prefix
    ARGV[2]  BullMQ's key prefix of a job of the steps queue (the job's hash is this + its id)
    ARGV[3]  window: at most this many jobs waiting in BullMQ's list after a dispatch
    ARGV[4]  jobs one organization may have dispatched at once (waiting in BullMQ, active or
             retrying), unless KEYS[7] has its own; 0: no limit
    ARGV[5]  grace, ms: a job dispatched this recently counts as running even if BullMQ has no
             hash for it yet (the caller adds it after the script returns)
    ARGV[6]  batch jobs dispatched at once, all batch lanes together, while interactive work is
             under way (BATCH_SLOTS_WHILE_INTERACTIVE); 0: no limit
    ARGV[7]  ms after an interactive dispatch that interactive work counts as under way
             (INTERACTIVE_QUIET_MS)
    ARGV[8]  while interactive work is under way, the least ms between two batch dispatches
             (BATCH_GAP_WHILE_INTERACTIVE_MS); 0: none
    ARGV[9..]  the script's own
]]
local ring, ringed, parked, jobs, bullWait, adding, limits = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local fairPrefix, jobPrefix = ARGV[1], ARGV[2]
local window, limit, grace = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local batchShare, quietMs, batchGap = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local lowRing, lowRinged = ring .. ':batch', ringed .. ':batch'
local busy, lowRunning, lowNext = ring .. ':busy', ring .. ':batch:running', ring .. ':batch:next'
local bullPrioritized = string.gsub(bullWait, ':wait$', ':prioritized')

local function waitingKey(org) return fairPrefix .. ':waiting:' .. org end
-- The batch lane's "organizations" (~b:<org>) take turns in a ring of their own.
local function isBatchLane(org) return string.sub(org, 1, 3) == '~b:' end
local function ringsOf(org)
  if isBatchLane(org) then return lowRing, lowRinged end
  return ring, ringed
end
local function runningKey(org) return fairPrefix .. ':running:' .. org end

-- Forgets the dispatched jobs of `key` (an organization's, or the batch lanes') that BullMQ
-- finished or never got (their release was lost with a worker, or the add after the dispatch
-- failed): so a count left high by a crash comes down, and a limit is never held by jobs that
-- are gone.
local function pruneKey(key)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', key, '-inf', now - grace)) do
    local jobKey = jobPrefix .. id
    if redis.call('EXISTS', jobKey) == 0 or redis.call('HEXISTS', jobKey, 'finishedOn') == 1 then
      redis.call('ZREM', key, id)
    end
  end
end
local function prune(org) pruneKey(runningKey(org)) end

-- Whether the organization is at its limit, its own or the default (its stale entries pruned
-- first: only then).
local function full(org)
  local own = redis.call('HGET', limits, org)
  local max = own and tonumber(own) or limit
  if max <= 0 then return false end
  if redis.call('ZCARD', runningKey(org)) < max then return false end
  prune(org)
  return redis.call('ZCARD', runningKey(org)) >= max
end

-- Puts an organization at the ring's tail unless it is in the ring already.
local function ringIn(org)
  local r, members = ringsOf(org)
  if redis.call('SISMEMBER', members, org) == 0 then
    redis.call('SREM', parked, org)
    redis.call('SADD', members, org)
    redis.call('RPUSH', r, org)
  end
end

-- Takes the ring's head organization's oldest job, then the next organization's, ..., while
-- `room` lasts: one job per organization per turn. An organization at its limit leaves the ring
-- for the parked set (a release or the reconciling pump brings it back), one with nothing left
-- leaves it. Each turn dispatches a job or shortens the ring, so the loop ends. Appends the jobs
-- to `out`; returns the room left.
local function serve(r, members, room, out, now)
  while room > 0 do
    local org = redis.call('LPOP', r)
    if not org then break end
    if full(org) then
      redis.call('SREM', members, org)
      redis.call('SADD', parked, org)
    else
      local id = redis.call('LPOP', waitingKey(org))
      if id then
        local payload = redis.call('HGET', jobs, id)
        redis.call('HDEL', jobs, id)
        if payload then
          out[#out + 1] = id
          out[#out + 1] = payload
          redis.call('ZADD', runningKey(org), now, id)
          redis.call('ZADD', adding, now, id)
          if r == lowRing then redis.call('ZADD', lowRunning, now, id) end
          room = room - 1
        end
      end
      if redis.call('LLEN', waitingKey(org)) > 0 then
        redis.call('RPUSH', r, org)
      else
        redis.call('SREM', members, org)
      end
    end
  end
  return room
end

-- Fills the window (the jobs in BullMQ's list and those on their way there, which other scripts
-- chose a moment ago) from the interactive ring first; the batch lane gets what room is left
-- only when no interactive job waits its turn, and its jobs already in BullMQ's prioritized set
-- count against that room too. While interactive work is under way (an interactive job was
-- dispatched in the last ARGV[7] ms), the batch lanes together have at most ARGV[6] jobs
-- dispatched, one at least ARGV[8] ms after the one before: batch steps then take a bounded
-- share of the workers' slots and CPUs, and the rest of the time all that interactive work
-- leaves. Returns {id1, payload1, id2, payload2, ...}: the caller adds them to BullMQ (batch jobs
-- with a priority, so that later interactive jobs still go first).
local function dispatch()
  local out = {}
  redis.call('ZREMRANGEBYSCORE', adding, '-inf', now - grace)
  local room = window - redis.call('LLEN', bullWait) - redis.call('ZCARD', adding)
  room = serve(ring, ringed, room, out, now)
  if #out > 0 then redis.call('SET', busy, 1, 'PX', quietMs) end
  if room > 0 and redis.call('LLEN', ring) == 0 and redis.call('LLEN', lowRing) > 0 then
    local batchRoom = room - redis.call('ZCARD', bullPrioritized)
    local spaced = false
    if (batchShare > 0 or batchGap > 0) and batchRoom > 0 and redis.call('EXISTS', busy) == 1 then
      if batchShare > 0 then
        local inFlight = redis.call('ZCARD', lowRunning)
        if inFlight >= batchShare then
          pruneKey(lowRunning)
          inFlight = redis.call('ZCARD', lowRunning)
        end
        batchRoom = math.min(batchRoom, batchShare - inFlight)
      end
      if batchGap > 0 and batchRoom > 0 then
        spaced = true
        if now < tonumber(redis.call('GET', lowNext) or '0') then batchRoom = 0 else batchRoom = 1 end
      end
    end
    local before = #out
    serve(lowRing, lowRinged, batchRoom, out, now)
    if spaced and #out > before then redis.call('SET', lowNext, now + batchGap, 'PX', batchGap + quietMs) end
  end
  return out
end
