import { isNotConnectionError, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { FairDispatch, type BatchLaneState, type FairJob, type FairStatus } from './fair-dispatch';
import { bundleJobId, stepJobId, type BundledStep, type JobPayload } from './job-catalog';
import { carriedContext } from '../platform/tracing';
import { QUEUE_NAMES } from './queue-names';

/**
 * The fair dispatch's name for an organization's batch rows (docs/scheduling.md, The batch lane):
 * they take turns in a ring of their own, served only when no interactive job waits, and enter
 * BullMQ with {@link BATCH_PRIORITY}, behind every job of its wait list.
 */
export const BATCH_LANE_PREFIX = '~b:';
export function batchLaneOf(orgId: string): string {
  return `${BATCH_LANE_PREFIX}${orgId}`;
}
/** BullMQ takes its wait list (priority 0) before its prioritized set: batch jobs go there. */
export const BATCH_PRIORITY = 1;

function jobOptions(job: FairJob): { jobId: string; priority?: number } {
  return typeof job.data.orgId === 'string' && job.data.orgId.startsWith(BATCH_LANE_PREFIX) ? { jobId: job.id, priority: BATCH_PRIORITY } : { jobId: job.id };
}

/** Deliveries of a step job whose executor threw (our infrastructure failing), and the first pause between them (doubled each time). */
export const STEP_JOB_ATTEMPTS = 8;
export const STEP_JOB_FIRST_BACKOFF_MS = 500;

/** Every step job's BullMQ options (the benchmarks' BullMQ peers take them too). */
export const STEP_JOB_OPTIONS = {
  removeOnComplete: true,
  // Failed jobs are the executor's own infrastructure failures (Postgres down, ...): kept a
  // day for inspection; the run itself is recovered by the reaper.
  removeOnFail: { age: 86_400 },
  // Retried with backoff when the executor itself throws (not when the node fails: that is
  // a step.failed, handled inside the job). 8 attempts from 500 ms doubling span about 64 s,
  // longer than a Postgres crash recovery or a failover; with 5 (7.5 s) a step whose commit
  // met such an outage waited for the reaper's STEP_STUCK_SECONDS (2 min) instead.
  attempts: STEP_JOB_ATTEMPTS,
  backoff: { type: 'exponential', delay: STEP_JOB_FIRST_BACKOFF_MS },
};

/**
 * How long a group's sibling counts as its group job's after the group was enqueued, even when
 * that job cannot be seen (not added yet, or finished while handing the sibling on): the reaper
 * leaves it alone that long. Longer than a group takes to run, shorter than a lost step should wait.
 */
export const GROUP_CLAIM_GRACE_MS = 60_000;
/** How long a run's record of its group siblings is kept (a day, as failed jobs are). */
const GROUP_RECORD_TTL_SECONDS = 86_400;
/** In a run's group record, what marks a claim by a bundle's job (its id follows), not by a group's head step. */
const BUNDLE_CLAIM = '@';

/** A claim of a run's group record: when it was made, and by a group's head step or a bundle's job. */
function claimOf(record: string | null): { at: number; head?: string; bundle?: string } | undefined {
  if (record === null) return undefined;
  const space = record.indexOf(' ');
  const at = Number(record.slice(0, space));
  const by = record.slice(space + 1);
  return by.startsWith(BUNDLE_CLAIM) ? { at, bundle: by.slice(BUNDLE_CLAIM.length) } : { at, head: by };
}

/** A run's first steps to enqueue, with the attempt tokens of those reserved with it. */
export interface FirstStepsOfRun {
  runId: string;
  nodeIds: readonly string[];
  tokens?: ReadonlyMap<string, string>;
}

/** Whether a run's first steps may go in a bundle: one step, reserved with its run. */
function isBundleable(run: FirstStepsOfRun): boolean {
  return run.nodeIds.length === 1 && run.tokens?.get(run.nodeIds[0]!) !== undefined;
}

export interface StepQueueOptions {
  /** Connection for the queue's commands (may be shared; never a subscriber connection). */
  connection: Redis;
  /** BullMQ key prefix: one per deployment (and per test file) sharing a Redis. */
  prefix: string;
  /** The queue's connection errors (BullMQ writes them to the console when nobody listens). */
  onError?: (err: Error) => void;
  /** Fair scheduling across organizations (docs/scheduling.md); without it, jobs go straight into BullMQ's list. */
  fair?: FairQueueOptions;
}

export interface FairQueueOptions {
  /** The organization a run belongs to. */
  orgOf(runId: string): Promise<string>;
  /** Jobs waiting in BullMQ's list at most (FAIR_DISPATCH_WINDOW). */
  window: number;
  /** Jobs of one organization dispatched at once (ORG_STEP_CONCURRENCY); 0: no limit. */
  orgLimit: number;
  /** How long a just-dispatched job counts as running before BullMQ has it (tests shorten it). */
  graceMs?: number;
  /** Batch jobs dispatched at once while interactive work is under way (BATCH_SLOTS_WHILE_INTERACTIVE); 0: no limit. */
  batchSlotsWhileInteractive?: number;
  /** How long after an interactive dispatch interactive work counts as under way (INTERACTIVE_QUIET_MS). */
  interactiveQuietMs?: number;
  /** While interactive work is under way, the least time between two batch dispatches (BATCH_GAP_WHILE_INTERACTIVE_MS). */
  batchGapWhileInteractiveMs?: number;
}

/**
 * Enqueues step jobs. A step's job id is derived from its run and node, so enqueueing a step
 * that is already waiting is a no-op; finished jobs are removed, so a step the reaper re-enqueues
 * gets a fresh job (the executor's `reserve` refuses steps that already ran).
 */
export class StepQueue {
  private current: Queue;
  private closed = false;
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly onError: (err: Error) => void;
  private readonly fair: { dispatch: FairDispatch; orgOf: (runId: string) => Promise<string> } | undefined;
  /** A refill under way, and whether another is asked for after it (`refill` batches them). */
  private refilling: Promise<void> | undefined;
  private refillAgain = false;
  /** Ended jobs whose release is not sent yet, and the releases under way (`release` batches them). */
  private readonly releases: { org: string; id: string }[] = [];
  private releasing: Promise<void> | undefined;

  constructor(options: StepQueueOptions) {
    this.redis = options.connection;
    this.prefix = options.prefix;
    this.onError = options.onError ?? (() => undefined);
    this.current = this.createQueue();
    const { fair } = options;
    if (fair) {
      const dispatch = new FairDispatch({
        redis: this.redis,
        prefix: this.prefix,
        bullWaitKey: this.current.keys.wait!,
        bullJobPrefix: this.current.toKey(''),
        window: fair.window,
        orgLimit: fair.orgLimit,
        ...(fair.graceMs === undefined ? {} : { graceMs: fair.graceMs }),
        ...(fair.batchSlotsWhileInteractive === undefined ? {} : { batchSlotsWhileInteractive: fair.batchSlotsWhileInteractive }),
        ...(fair.interactiveQuietMs === undefined ? {} : { interactiveQuietMs: fair.interactiveQuietMs }),
        ...(fair.batchGapWhileInteractiveMs === undefined ? {} : { batchGapWhileInteractiveMs: fair.batchGapWhileInteractiveMs }),
      });
      this.fair = { dispatch, orgOf: fair.orgOf };
    }
  }

  /** The BullMQ queue (for tests and tools; the methods below replace one that Redis refused). */
  get queue(): Queue {
    return this.current;
  }

  private createQueue(): Queue {
    const queue = new Queue(QUEUE_NAMES.steps, {
      connection: this.redis,
      prefix: this.prefix,
      defaultJobOptions: STEP_JOB_OPTIONS,
    });
    queue.on('error', (err) => this.onError(err));
    return queue;
  }

  /**
   * Runs a call on the queue. BullMQ asks Redis its version (INFO) once, when a queue's connection
   * is first ready, and keeps a refusal (BUSY: a long script; NOPERM) for good: every later call
   * fails with it. After a failed call, a queue whose start was refused is replaced, so that the
   * next call starts afresh (startStepWorker does the same for the worker).
   */
  private async call<T>(fn: (queue: Queue) => Promise<T>): Promise<T> {
    const queue = this.current;
    try {
      return await fn(queue);
    } catch (err) {
      const refused = await queue.waitUntilReady().then(
        () => false,
        (startErr: unknown) => startErr instanceof Error && isNotConnectionError(startErr),
      );
      if (refused && queue === this.current && !this.closed) {
        this.current = this.createQueue();
        void queue.close().catch(() => undefined);
      }
      throw err;
    }
  }

  /**
   * Enqueues one job per node of the run, in one round trip; `tokens` are carried by the jobs of
   * steps reserved with the run, `groups` (by a job's node) the siblings that job runs after it.
   * Every group is recorded first, one round trip more, also one keyed by a job not enqueued here
   * (the job running it: a group it runs next inline), so that the reaper leaves its steps to it.
   */
  async enqueue(runId: string, nodeIds: readonly string[], tokens?: ReadonlyMap<string, string>, groups?: ReadonlyMap<string, readonly string[]>): Promise<void> {
    if (groups?.size) await this.recordGroups(runId, groups);
    if (nodeIds.length === 0) return;
    const jobs = this.jobsOf(runId, nodeIds, tokens, groups, carriedContext());
    if (!this.fair) return this.add(jobs);
    // The organization travels with the job, so that the worker that ends it frees its slot.
    const orgId = await this.fair.orgOf(runId);
    for (const job of jobs) job.data.orgId = orgId;
    await this.addDispatched(await this.fair.dispatch.offer(orgId, jobs));
  }

  /**
   * Enqueues the first steps of many runs at once (a batch's turn): one offer per organization
   * and one add of all they dispatched, where `enqueue` makes a round trip of each per run. No
   * groups: `enqueue` records those first. With `bundleRows` over 1, runs whose one first step
   * was reserved with the run (it carries its token) go `bundleRows` to a job (`step.bundle`),
   * each step recorded first as claimed by its bundle.
   */
  async enqueueRuns(runs: readonly FirstStepsOfRun[], options: { bundleRows?: number } = {}): Promise<void> {
    const trace = carriedContext();
    const bundleRows = options.bundleRows ?? 1;
    const { fair } = this;
    const orgs = fair ? await Promise.all(runs.map(({ runId }) => fair.orgOf(runId))) : undefined;
    // By organization (none without fair scheduling): its runs' jobs, and the runs that go in its
    // bundles (a bundle holds one organization's rows: its lane's turn, its slot).
    const byOrg = new Map<string | undefined, { jobs: FairJob[]; bundled: FirstStepsOfRun[] }>();
    runs.forEach((run, i) => {
      const orgId = orgs?.[i];
      let entry = byOrg.get(orgId);
      if (!entry) byOrg.set(orgId, (entry = { jobs: [], bundled: [] }));
      if (bundleRows > 1 && isBundleable(run)) entry.bundled.push(run);
      else entry.jobs.push(...this.jobsOf(run.runId, run.nodeIds, run.tokens, undefined, trace));
    });
    const bundles = [...byOrg.values()].flatMap((entry) => this.bundlesOf(entry.bundled, bundleRows, trace).map((bundle) => ({ ...bundle, entry })));
    await this.recordBundles(bundles);
    for (const { job, entry } of bundles) entry.jobs.push(job);
    if (!fair) return this.add([...byOrg.values()].flatMap((entry) => entry.jobs));
    const dispatched = await Promise.all(
      [...byOrg].map(([orgId, { jobs }]) => {
        // The organization travels with the job, so that the worker that ends it frees its slot.
        for (const job of jobs) job.data.orgId = orgId;
        return fair.dispatch.offer(orgId!, jobs);
      }),
    );
    await this.addDispatched(dispatched.flat());
  }

  /** Runs' first steps `bundleRows` to a `step.bundle` job. */
  private bundlesOf(runs: readonly FirstStepsOfRun[], bundleRows: number, trace: ReturnType<typeof carriedContext>): { job: FairJob; steps: BundledStep[] }[] {
    const bundles: { job: FairJob; steps: BundledStep[] }[] = [];
    for (let i = 0; i < runs.length; i += bundleRows) {
      const steps = runs.slice(i, i + bundleRows).map((run): BundledStep => {
        const nodeId = run.nodeIds[0]!;
        return { runId: run.runId, nodeId, attemptToken: run.tokens!.get(nodeId)! };
      });
      const data: JobPayload<'step.bundle'> = { steps, ...(trace ? { trace } : {}) };
      bundles.push({ job: { id: bundleJobId(), name: 'step.bundle', data }, steps });
    }
    return bundles;
  }

  /**
   * Records each bundled step as claimed by its bundle's job, in its run's group record, before
   * the bundles are added: the step has no job of its own, and the reaper must leave it to the
   * bundle while the bundle may still run it. One pipeline for every run of the turn.
   */
  private async recordBundles(bundles: readonly { job: FairJob; steps: readonly BundledStep[] }[]): Promise<void> {
    if (bundles.length === 0) return;
    const now = Date.now();
    const pipeline = this.redis.pipeline();
    for (const { job, steps } of bundles) {
      for (const { runId, nodeId } of steps) {
        const key = this.groupsKey(runId);
        pipeline.hset(key, nodeId, `${now} ${BUNDLE_CLAIM}${job.id}`).expire(key, GROUP_RECORD_TTL_SECONDS);
      }
    }
    const replies = await pipeline.exec();
    const failed = replies?.find(([err]) => err);
    if (failed) throw failed[0];
  }

  /** The jobs of run `runId`'s steps `nodeIds`, with the attempt tokens and groups they carry. */
  private jobsOf(runId: string, nodeIds: readonly string[], tokens: ReadonlyMap<string, string> | undefined, groups: ReadonlyMap<string, readonly string[]> | undefined, trace: ReturnType<typeof carriedContext>): FairJob[] {
    return nodeIds.map((nodeId): FairJob => {
      const attemptToken = tokens?.get(nodeId);
      const group = groups?.get(nodeId);
      const data: JobPayload<'step.execute'> = { runId, nodeId, ...(attemptToken === undefined ? {} : { attemptToken }), ...(group?.length ? { group: [...group] } : {}), ...(trace ? { trace } : {}) };
      return { id: stepJobId(runId, nodeId), name: 'step.execute', data };
    });
  }

  /** Adds jobs the fair dispatch chose, then tells it they are in BullMQ's list (not waited for: until it lands, the window counts them twice, erring short). */
  private async addDispatched(jobs: readonly FairJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.add(jobs);
    this.fair?.dispatch.added(jobs.map((job) => job.id)).catch(() => undefined);
  }

  /** Adds jobs to BullMQ's list: one a plain add, without addBulk's MULTI. */
  private async add(jobs: readonly FairJob[]): Promise<void> {
    if (jobs.length === 0) return;
    if (jobs.length === 1) {
      const [job] = jobs as [FairJob];
      await this.call((queue) => queue.add(job.name, job.data, jobOptions(job)));
      return;
    }
    await this.call((queue) => queue.addBulk(jobs.map((job) => ({ name: job.name, data: job.data, opts: jobOptions(job) }))));
  }

  /**
   * Moves jobs waiting their organization's turn into BullMQ's list while it has room, after
   * looking again at organizations parked at their limit (on a timer: releases lost with a worker,
   * and a window emptied by workers while no job ended).
   */
  async reconcile(): Promise<void> {
    if (this.fair) await this.addDispatched(await this.fair.dispatch.pump(true));
  }

  /**
   * A worker has room again without a job having ended (a job lent its slot while its step waits
   * on a provider): jobs waiting their organizations' turns move into BullMQ's list while the
   * window has room. Calls while one is under way go together in the next.
   */
  refill(): Promise<void> {
    const { fair } = this;
    if (!fair) return Promise.resolve();
    this.refillAgain = true;
    this.refilling ??= (async () => {
      try {
        while (this.refillAgain) {
          this.refillAgain = false;
          await this.addDispatched(await fair.dispatch.pump(false));
        }
      } finally {
        this.refilling = undefined;
      }
    })();
    return this.refilling;
  }

  /** Organization `orgId`'s place in the queue; null without fair scheduling (one FIFO queue knows no organizations). */
  async orgStatus(orgId: string): Promise<FairStatus | null> {
    return this.fair ? this.fair.dispatch.status(orgId) : null;
  }

  /**
   * Organization `orgId`'s batch lane: its jobs waiting their turn, and whether interactive work
   * is under way; null without fair scheduling (no lane: a feeder then paces by its batch's
   * concurrency alone).
   */
  async batchLaneState(orgId: string): Promise<BatchLaneState | null> {
    return this.fair ? this.fair.dispatch.batchLane(batchLaneOf(orgId)) : null;
  }

  /** Organizations' own concurrency limits (from Postgres), replacing those set before. */
  async setOrgLimits(limits: ReadonlyMap<string, number>): Promise<void> {
    await this.fair?.dispatch.setLimits(limits);
  }

  /**
   * A job of organization `orgId` ended (completed, or failed for good): its slot goes to the next
   * job waiting. Releases while one is under way go together in the next (one script for many
   * when jobs end faster than Redis answers).
   */
  release(orgId: string | undefined, jobId: string): Promise<void> {
    const { fair } = this;
    if (!fair || orgId === undefined) return Promise.resolve();
    this.releases.push({ org: orgId, id: jobId });
    this.releasing ??= (async () => {
      try {
        while (this.releases.length > 0) await this.addDispatched(await fair.dispatch.release(this.releases.splice(0)));
      } finally {
        this.releasing = undefined;
      }
    })();
    return this.releasing;
  }

  /**
   * Enqueues steps again for the reaper, skipping those whose job is alive (waiting, active,
   * delayed): a job that failed (our infrastructure failed it every time) or finished is removed
   * first, since its id would otherwise make the new enqueue a no-op. A group's sibling is left to
   * its group job while that job is alive or the group is recent, unless that job is `gone`: the
   * caller is that job (a redelivery, or an attempt that lost its step), giving up what its
   * earlier run held. Returns the steps enqueued.
   */
  async requeue(runId: string, nodeIds: readonly string[], options: { gone?: string } = {}): Promise<string[]> {
    const requeued = await this.withoutLiveJob(runId, nodeIds, { ...options, removeDead: true });
    await this.enqueue(runId, requeued);
    return requeued;
  }

  /**
   * Of `nodeIds`, the steps no job may still run: neither their own job (waiting, active,
   * delayed) nor, for a group's sibling, its group job while alive or recent (see `requeue`).
   * With `removeDead`, a failed or finished own job is removed on the way.
   */
  async withoutLiveJob(runId: string, nodeIds: readonly string[], options: { gone?: string; removeDead?: boolean } = {}): Promise<string[]> {
    const jobless: string[] = [];
    for (const nodeId of nodeIds) {
      if (await this.alive(runId, nodeId, { removeDead: options.removeDead })) continue;
      jobless.push(nodeId);
    }
    return this.notInLiveGroups(runId, jobless, options.gone);
  }

  /** Whether the step's own job is waiting, active or delayed; with `removeDead`, a failed or finished one is removed. */
  private alive(runId: string, nodeId: string, options: { removeDead?: boolean } = {}): Promise<boolean> {
    return this.jobAlive(stepJobId(runId, nodeId), options);
  }

  /** Whether job `jobId` is waiting (its organization's turn, or in BullMQ), active or delayed; with `removeDead`, a failed or finished one is removed. */
  private async jobAlive(jobId: string, options: { removeDead?: boolean } = {}): Promise<boolean> {
    // Waiting for its organization's turn: alive, with no BullMQ job yet.
    if (this.fair && (await this.fair.dispatch.isWaiting(jobId))) return true;
    const job = await this.call((queue) => queue.getJob(jobId));
    if (!job) return false;
    const state = await job.getState();
    if (state !== 'failed' && state !== 'completed' && state !== 'unknown') return true;
    if (options.removeDead) await job.remove().catch(() => undefined);
    return false;
  }

  /** The run's record of group siblings: by sibling, its group job's step and when the group was enqueued. */
  private groupsKey(runId: string): string {
    return `${this.prefix}:step-groups:${runId}`;
  }

  /**
   * Records each sibling's group job before the jobs are added: a sibling has no job of its own,
   * and the reaper must not give it one while its group job may still run it (two attempts would
   * each hold its worst case against the cap).
   */
  private async recordGroups(runId: string, groups: ReadonlyMap<string, readonly string[]>): Promise<void> {
    const now = Date.now();
    const entries: Record<string, string> = {};
    for (const [head, siblings] of groups) for (const sibling of siblings) entries[sibling] = `${now} ${head}`;
    const key = this.groupsKey(runId);
    await this.redis.multi().hset(key, entries).expire(key, GROUP_RECORD_TTL_SECONDS).exec();
  }

  /**
   * Of steps without a live job of their own, those that are no group's or bundle's either (its
   * job alive, or the claim made within the grace); a group of the `gone` job is no one's. A
   * group's head may itself be a bundled step: its group is claimed while its bundle is.
   */
  private async notInLiveGroups(runId: string, nodeIds: readonly string[], gone?: string): Promise<string[]> {
    if (nodeIds.length === 0) return [];
    const key = this.groupsKey(runId);
    const records = await this.redis.hmget(key, ...nodeIds);
    // A claiming job is looked up once, however many steps are asked about.
    const jobs = new Map<string, Promise<boolean>>();
    const jobAlive = (jobId: string) => jobs.get(jobId) ?? jobs.set(jobId, this.jobAlive(jobId)).get(jobId)!;
    const headAlive = async (head: string): Promise<boolean> => {
      if (await jobAlive(stepJobId(runId, head))) return true;
      const bundle = claimOf(await this.redis.hget(key, head))?.bundle;
      return bundle !== undefined && (await jobAlive(bundle));
    };
    const left: string[] = [];
    for (const [i, nodeId] of nodeIds.entries()) {
      const claim = claimOf(records[i] ?? null);
      const recent = claim !== undefined && Date.now() - claim.at < GROUP_CLAIM_GRACE_MS;
      const claimed =
        claim?.bundle !== undefined ? recent || (await jobAlive(claim.bundle)) : claim?.head !== undefined && claim.head !== gone && (recent || (await headAlive(claim.head)));
      if (!claimed) left.push(nodeId);
    }
    return left;
  }

  /**
   * Jobs waiting, delayed, active and failed (kept a day), for metrics. `waiting` counts every job
   * not started yet, those waiting for their organization's turn included (the backlog autoscaling
   * reads); `held` is that part of it.
   */
  async counts(): Promise<{ waiting: number; active: number; delayed: number; failed: number; held: number }> {
    const [counts, fair] = await Promise.all([this.call((queue) => queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed')), this.fair?.dispatch.waiting()]);
    const held = fair?.jobs ?? 0;
    return { waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + held, active: counts.active ?? 0, delayed: counts.delayed ?? 0, failed: counts.failed ?? 0, held };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.current.close();
  }
}
