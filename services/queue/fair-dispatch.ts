import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script';

/** The scripts share their keys, arguments and `dispatch()`: `scripts/includes/fair-dispatch.lua`. */
const OFFER = RedisScript.fromFile('fair-dispatch-offer');
const RELEASE = RedisScript.fromFile('fair-dispatch-release');
const PUMP = RedisScript.fromFile('fair-dispatch-pump');
const STATUS = RedisScript.fromFile('fair-dispatch-status');

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
  /** Batch jobs dispatched at once, all batch lanes together, while interactive work is under way (BATCH_SLOTS_WHILE_INTERACTIVE); 0 or absent: no limit. */
  batchSlotsWhileInteractive?: number;
  /** How long after an interactive dispatch interactive work counts as under way (INTERACTIVE_QUIET_MS); default 250 ms. */
  interactiveQuietMs?: number;
  /** While interactive work is under way, the least time between two batch dispatches (BATCH_GAP_WHILE_INTERACTIVE_MS); 0 or absent: none. */
  batchGapWhileInteractiveMs?: number;
}

/** A batch lane's state, as a batch feeder paces its turns by it. */
export interface BatchLaneState {
  /** The lane's jobs waiting their turn (not dispatched yet). */
  waiting: number;
  /** Whether interactive work is under way: batch jobs then have a bounded share of the slots. */
  interactiveBusy: boolean;
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

  /** Lane `lane`'s jobs waiting, and whether interactive work is under way (one round trip). */
  async batchLane(lane: string): Promise<BatchLaneState> {
    const replies = await this.options.redis.multi().llen(`${this.fairPrefix}:waiting:${lane}`).exists(`${this.keys[0]!}:busy`).exec();
    const value = (i: number): number => {
      const [err, reply] = replies![i]!;
      if (err) throw err;
      return Number(reply);
    };
    return { waiting: value(0), interactiveBusy: value(1) === 1 };
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
    const { window, orgLimit, graceMs = 10_000, bullJobPrefix, redis, batchSlotsWhileInteractive = 0, interactiveQuietMs = 250, batchGapWhileInteractiveMs = 0 } = this.options;
    const common = [this.fairPrefix, bullJobPrefix, window, orgLimit, graceMs, batchSlotsWhileInteractive, interactiveQuietMs, batchGapWhileInteractiveMs];
    return script.run(redis, this.keys, [...common, ...args]);
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
