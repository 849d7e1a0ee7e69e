import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script';

/**
 * The part every fair-dispatch script shares: its keys, the clock, and `dispatch`, which moves
 * waiting jobs towards BullMQ one organization at a time, round robin.
 *
 * Keys (one hash slot: every name starts with the deployment's prefix, a hash tag under a Redis
 * Cluster, so the per-organization keys built here share the slot of those passed in):
 *   KEYS[1]  ring: organizations with jobs waiting and room to run them, in turn order (list)
 *   KEYS[2]  ringed: the organizations in the ring (set; the ring holds each at most once)
 *   KEYS[3]  parked: organizations with jobs waiting at their concurrency limit (set)
 *   KEYS[4]  jobs: every waiting job's payload, by job id (hash)
 *   KEYS[5]  BullMQ's wait list of the steps queue (list; read only)
 *   KEYS[6]  adding: jobs dispatched and not yet in BullMQ's list, job id -> when, ms (sorted
 *            set; the caller removes each once added, the grace forgets one whose add was lost)
 *   KEYS[7]  limits: organizations' own concurrency limits, org -> limit (hash; copied from
 *            Postgres by the workers; an organization without one has ARGV[4])
 *   <ARGV[1]>:waiting:<org>  the organization's waiting job ids, oldest first (list)
 *   <ARGV[1]>:running:<org>  its dispatched jobs: job id -> when dispatched, ms (sorted set)
 *
 * Common arguments:
 *   ARGV[1]  the fair-dispatch key prefix
 *   ARGV[2]  BullMQ's key prefix of a job of the steps queue (the job's hash is this + its id)
 *   ARGV[3]  window: at most this many jobs waiting in BullMQ's list after a dispatch
 *   ARGV[4]  jobs one organization may have dispatched at once (waiting in BullMQ, active or
 *            retrying), unless KEYS[7] has its own; 0: no limit
 *   ARGV[5]  grace, ms: a job dispatched this recently counts as running even if BullMQ has no
 *            hash for it yet (the caller adds it after the script returns)
 */
const SHARED = `
local ring, ringed, parked, jobs, bullWait, adding, limits = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local fairPrefix, jobPrefix = ARGV[1], ARGV[2]
local window, limit, grace = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function waitingKey(org) return fairPrefix .. ':waiting:' .. org end
local function runningKey(org) return fairPrefix .. ':running:' .. org end

-- Forgets an organization's dispatched jobs that BullMQ finished or never got (their release
-- was lost with a worker, or the add after the dispatch failed): so a count left high by a crash
-- comes down, and a limit is never held by jobs that are gone.
local function prune(org)
  local key = runningKey(org)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', key, '-inf', now - grace)) do
    local jobKey = jobPrefix .. id
    if redis.call('EXISTS', jobKey) == 0 or redis.call('HEXISTS', jobKey, 'finishedOn') == 1 then
      redis.call('ZREM', key, id)
    end
  end
end

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
  if redis.call('SISMEMBER', ringed, org) == 0 then
    redis.call('SREM', parked, org)
    redis.call('SADD', ringed, org)
    redis.call('RPUSH', ring, org)
  end
end

-- Takes the ring's head organization's oldest job, then the next organization's, ..., while the
-- window has room (the jobs in BullMQ's list and those on their way there, which other scripts
-- chose a moment ago): one job per organization per turn. An organization at its limit leaves the
-- ring for the parked set (a release or the reconciling pump brings it back), one with nothing
-- left leaves it. Each turn dispatches a job or shortens the ring, so the loop ends.
-- Returns {id1, payload1, id2, payload2, ...}: the caller adds them to BullMQ.
local function dispatch()
  local out = {}
  redis.call('ZREMRANGEBYSCORE', adding, '-inf', now - grace)
  local room = window - redis.call('LLEN', bullWait) - redis.call('ZCARD', adding)
  while room > 0 do
    local org = redis.call('LPOP', ring)
    if not org then break end
    if full(org) then
      redis.call('SREM', ringed, org)
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
          room = room - 1
        end
      end
      if redis.call('LLEN', waitingKey(org)) > 0 then
        redis.call('RPUSH', ring, org)
      else
        redis.call('SREM', ringed, org)
      end
    end
  end
  return out
end
`;

const OFFER = new RedisScript(`
--[[
  Queues an organization's jobs behind its earlier ones, then dispatches (see SHARED).

  Input (besides SHARED's):
    ARGV[6]   the organization
    ARGV[7..] job id, payload, job id, payload, ...: a job whose id is waiting already is left
              as it is (an enqueue of a waiting step is a no-op, as BullMQ's own add is)

  Output: the jobs dispatched, as dispatch() returns them
]]
${SHARED}
local org = ARGV[6]
local added = 0
for i = 7, #ARGV, 2 do
  if redis.call('HSETNX', jobs, ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('RPUSH', waitingKey(org), ARGV[i])
    added = added + 1
  end
end
if added > 0 and redis.call('SISMEMBER', parked, org) == 0 then ringIn(org) end
return dispatch()
`);

const RELEASE = new RedisScript(`
--[[
  Dispatched jobs ended (completed, or failed for good): their organizations' slots are free; a
  parked organization with jobs waiting and room again goes back into the ring. Then dispatches
  (see SHARED).

  Input (besides SHARED's):
    ARGV[6..]  organization, job id, organization, job id, ...

  Output: the jobs dispatched, as dispatch() returns them
]]
${SHARED}
for i = 6, #ARGV, 2 do
  redis.call('ZREM', runningKey(ARGV[i]), ARGV[i + 1])
end
for i = 6, #ARGV, 2 do
  local org = ARGV[i]
  if redis.call('SISMEMBER', parked, org) == 1 and not full(org) then
    if redis.call('LLEN', waitingKey(org)) > 0 then ringIn(org) else redis.call('SREM', parked, org) end
  end
end
return dispatch()
`);

const PUMP = new RedisScript(`
--[[
  Dispatches (see SHARED), on a timer. With reconcile, first prunes every parked organization and brings back into the
  ring those with room again: releases lost with a crashed worker never park one for good.

  Input (besides SHARED's):
    ARGV[6]  1: reconcile first; 0: not

  Output: the jobs dispatched, as dispatch() returns them
]]
${SHARED}
if ARGV[6] == '1' then
  for _, org in ipairs(redis.call('SMEMBERS', parked)) do
    if redis.call('LLEN', waitingKey(org)) == 0 then
      redis.call('SREM', parked, org)
    elseif not full(org) then
      ringIn(org)
    end
  end
end
return dispatch()
`);

const STATUS = new RedisScript(`
--[[
  One organization's place in the queue, its dispatched jobs that are gone pruned first (as
  prune() does, whatever its limit). Dispatches nothing.

  Input (besides SHARED's):
    ARGV[6]  the organization

  Output: {waiting, dispatched, own limit or -1, organizations with jobs waiting}
]]
${SHARED}
local org = ARGV[6]
prune(org)
local own = redis.call('HGET', limits, org)
return {redis.call('LLEN', waitingKey(org)), redis.call('ZCARD', runningKey(org)), own and tonumber(own) or -1, redis.call('SCARD', ringed) + redis.call('SCARD', parked)}
`);

/** One organization's place in the queue. */
export interface FairStatus {
  /** Jobs waiting for its turn. */
  waiting: number;
  /** Jobs dispatched: in BullMQ's list, running, or waiting for a retry. */
  dispatched: number;
  /** Its own limit (0: none), or null when the default applies. */
  ownLimit: number | null;
  /** Organizations with jobs waiting, in the ring or parked. */
  organizationsWaiting: number;
}

/** A job as the fair dispatch holds it: BullMQ's name and data, under the job's id. */
export interface FairJob {
  id: string;
  name: string;
  data: Record<string, unknown>;
}

export interface FairDispatchOptions {
  redis: Redis;
  /** The deployment's Redis prefix. */
  prefix: string;
  /** BullMQ's key of the steps queue's wait list (`queue.keys.wait`). */
  bullWaitKey: string;
  /** BullMQ's key prefix of the steps queue's jobs (`queue.toKey('')`). */
  bullJobPrefix: string;
  /** Jobs waiting in BullMQ's list at most (FAIR_DISPATCH_WINDOW). */
  window: number;
  /** Jobs of one organization dispatched at once (ORG_STEP_CONCURRENCY); 0: no limit. */
  orgLimit: number;
  /** How long a job just dispatched counts as running without a BullMQ hash; default 10 s. */
  graceMs?: number;
}

/**
 * Fair scheduling of step jobs across organizations (docs/scheduling.md). BullMQ's open-source
 * queue is one FIFO list: an organization that enqueues ten thousand steps puts everyone else's
 * behind them. So jobs wait here first, in a list per organization, and are moved into BullMQ's
 * list round robin, one organization's oldest job at a time, only while that list holds fewer
 * than `window` jobs and the organization has fewer than `orgLimit` dispatched: a job of an
 * organization arriving behind a flood waits behind at most `window` jobs, not the flood.
 *
 * The scripts only choose; the caller adds what they return to BullMQ (its own add keeps its job
 * hashes, events and markers right). A job chosen and then lost before its add (the process
 * died, Redis failed the add) is a step without a job, which the reaper enqueues again from
 * Postgres, as it does any job Redis lost; its slot is pruned once the grace is over.
 */
export class FairDispatch {
  private readonly keys: string[];
  private readonly fairPrefix: string;

  constructor(private readonly options: FairDispatchOptions) {
    this.fairPrefix = `${options.prefix}:fair`;
    const p = this.fairPrefix;
    this.keys = [`${p}:ring`, `${p}:ringed`, `${p}:parked`, `${p}:jobs`, options.bullWaitKey, `${p}:adding`, `${p}:limits`];
  }

  /** Queues `jobs` of organization `org`; answers the jobs (of any organization) to add to BullMQ now. */
  offer(org: string, jobs: readonly FairJob[]): Promise<FairJob[]> {
    const pairs = jobs.flatMap((job) => [job.id, JSON.stringify({ name: job.name, data: job.data })]);
    return this.run(OFFER, [org, ...pairs]);
  }

  /** These jobs ended; answers the jobs to add to BullMQ now. */
  release(ended: readonly { org: string; id: string }[]): Promise<FairJob[]> {
    return this.run(RELEASE, ended.flatMap(({ org, id }) => [org, id]));
  }

  /** Answers the jobs to add to BullMQ now; `reconcile`: parked organizations are looked at again first. */
  pump(reconcile: boolean): Promise<FairJob[]> {
    return this.run(PUMP, [reconcile ? 1 : 0]);
  }

  /** Jobs the caller added to BullMQ after a dispatch: no longer on their way (the window counts them in BullMQ's list now). */
  async added(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.options.redis.zrem(this.keys[5]!, ...ids);
  }

  /**
   * Replaces the organizations' own limits (ORG_STEP_CONCURRENCY for the others) in one
   * transaction. An organization whose limit went up waits for the next reconciling pump to leave
   * the parked set.
   */
  async setLimits(limits: ReadonlyMap<string, number>): Promise<void> {
    const key = this.keys[6]!;
    const multi = this.options.redis.multi().del(key);
    if (limits.size > 0) multi.hset(key, Object.fromEntries(limits));
    await multi.exec();
  }

  /** Whether job `id` waits here (not dispatched yet). */
  async isWaiting(id: string): Promise<boolean> {
    return (await this.options.redis.hexists(this.keys[3]!, id)) === 1;
  }

  /** Jobs waiting here, and the organizations they belong to (in the ring or parked at their limit). */
  async waiting(): Promise<{ jobs: number; organizations: number }> {
    const [jobs, ringed, parked] = await Promise.all([this.options.redis.hlen(this.keys[3]!), this.options.redis.scard(this.keys[1]!), this.options.redis.scard(this.keys[2]!)]);
    return { jobs, organizations: ringed + parked };
  }

  /** Organization `org`'s place in the queue. */
  async status(org: string): Promise<FairStatus> {
    const [waiting, dispatched, own, organizationsWaiting] = (await this.call(STATUS, [org])) as number[];
    return { waiting: waiting!, dispatched: dispatched!, ownLimit: own! < 0 ? null : own!, organizationsWaiting: organizationsWaiting! };
  }

  private call(script: RedisScript, args: readonly (string | number)[]): Promise<unknown> {
    const { window, orgLimit, graceMs = 10_000, bullJobPrefix, redis } = this.options;
    return script.run(redis, this.keys, [this.fairPrefix, bullJobPrefix, window, orgLimit, graceMs, ...args]);
  }

  private async run(script: RedisScript, args: readonly (string | number)[]): Promise<FairJob[]> {
    const reply = (await this.call(script, args)) as string[];
    const out: FairJob[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const { name, data } = JSON.parse(reply[i + 1]!) as { name: string; data: Record<string, unknown> };
      out.push({ id: reply[i]!, name, data });
    }
    return out;
  }
}
