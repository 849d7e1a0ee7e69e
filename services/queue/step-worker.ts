import { setTimeout as sleep } from 'node:timers/promises';
import { isNotConnectionError, Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { JobCatalog, JobName, JobPayload } from './job-catalog';
import { QUEUE_NAMES } from './queue-names';

/** One handler per job of the steps queue: exhaustive over the job catalog. */
export type StepJobHandlers = {
  [N in JobName as JobCatalog[N]['queue'] extends 'steps' ? N : never]: (payload: JobPayload<N>, job: Job) => Promise<void>;
};

export interface StepWorkerOptions {
  /** A dedicated connection: the worker blocks on it waiting for jobs. */
  connection: Redis;
  prefix: string;
  /** Step jobs running on this process' own work at once (WORKER_CONCURRENCY): local steps, and any step before and after its provider waits. */
  concurrency: number;
  /**
   * Jobs that may wait on a provider at once outside those slots (PROVIDER_STEP_CONCURRENCY): a
   * job whose step waits on a provider lends its slot back (`lendSlot`) for as long as it waits,
   * so waiting costs a promise and a socket, not a slot. 0: none (every job keeps its slot).
   */
  lendable?: number;
  /** A job whose worker is silent this long is presumed dead and redelivered (BullMQ stalled-job check). */
  lockMs: number;
  handlers: StepJobHandlers;
  log: Logger;
  /** A job ended: completed, or failed with no attempt left (fair scheduling frees its organization's slot). */
  onEnded?: (job: Job) => void;
}

/** The pause after a job fetch Redis refused (BUSY, OOM, READONLY...), doubled from the first to the last while refusals go on. */
const FETCH_RETRY_FIRST_MS = 50;
const FETCH_RETRY_LAST_MS = 1_000;
/** The pause before a worker whose start Redis refused is replaced, doubled likewise. */
const RESTART_FIRST_MS = 200;
const RESTART_LAST_MS = 5_000;

const doubled = (first: number, last: number, times: number) => Math.min(last, first * 2 ** Math.min(times, 16));

/** Waits `ms`, or less if `signal` aborts first. */
const pause = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).catch(() => undefined);

/**
 * A BullMQ worker that starts a job it has just taken before it looks for another, and that waits
 * between fetches Redis refuses.
 *
 * Prompt start: BullMQ's loop, having taken a job, often asks Redis for the next one and waits for
 * the answer before it processes the first (test/integration/step-worker.test.ts: 4 and 5 jobs of
 * 6): at low load a round trip (an empty `moveToActive`) between a step's arrival and its start.
 * The loop goes on to process what it has when its `blockUntil` is set (a delayed job due); set
 * after each job taken, the loop starts the job and looks for the next while it runs (the look-up
 * is the same; only the wait is gone). Every answer of Redis resets it first (`updateDelays`).
 * `blockUntil` is BullMQ's own field: the test above fails should a release rename it.
 *
 * Refused fetches: after an error that is not a lost connection (a Redis BUSY with a long script,
 * out of memory, a replica after a failover) BullMQ fetches again at once, as fast as Redis
 * answers, with an `error` (a log line) each time: 142 in a 2 s script (the test above). The
 * worker waits between such fetches instead; a lost connection BullMQ waits out itself.
 */
class PromptWorker extends Worker {
  private refusedFetches = 0;
  /** Slots lent out now: jobs waiting on a provider, on top of the `slots` the loop fetches for. */
  private lent = 0;
  private slots = 1;
  /** Ends a pause between refused fetches when the worker closes. */
  private readonly stopPausing = new AbortController();

  constructor(name: string, processor: Processor, options: WorkerOptions) {
    super(name, processor, options);
    this.slots = options.concurrency ?? 1;
    this.once('closing', () => this.stopPausing.abort());
  }

  /** Jobs waiting on a provider now, their slots lent out. */
  get lentSlots(): number {
    return this.lent;
  }

  /**
   * The job calling this waits on a provider: its slot goes back to the loop, which fetches
   * another job, until the returned function (idempotent) takes it back. BullMQ's loop fetches
   * while its jobs number fewer than `concurrency`, so raising it by the jobs lent out keeps the
   * jobs on this process' own work at `slots`. The loop, when every slot is busy, sleeps until a
   * job ends (`mainLoopQueue.fetch()`): a resolved promise added to that queue wakes it, to
   * fetch for the slot just lent (`mainLoopQueue` is BullMQ's own field:
   * test/integration/step-worker.test.ts fails should a release rename it).
   */
  lendSlot(): () => void {
    this.lent++;
    this.concurrency = this.slots + this.lent;
    (this as unknown as { mainLoopQueue: { add(p: Promise<undefined>): void } | null }).mainLoopQueue?.add(Promise.resolve(undefined));
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.lent--;
      this.concurrency = this.slots + this.lent;
    };
  }

  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    let job: Job;
    try {
      job = await super.moveToActive(token, name);
    } catch (err) {
      if (err instanceof Error && isNotConnectionError(err)) await pause(doubled(FETCH_RETRY_FIRST_MS, FETCH_RETRY_LAST_MS, this.refusedFetches++), this.stopPausing.signal);
      throw err;
    }
    this.refusedFetches = 0;
    // A time long past: "delayed jobs due", which only ends the loop's look-ahead.
    if (job) (this as unknown as { blockUntil: number }).blockUntil = 1;
    return job;
  }
}

/** A step worker: the BullMQ worker taking jobs, replaced should Redis refuse its start. */
export interface StepWorker {
  /** The BullMQ worker once it takes jobs (or once the step worker stopped before that). */
  readonly started: Promise<Worker>;
  /**
   * The calling job waits on a provider from now: its slot is lent back while it waits, unless
   * `lendable` jobs wait so already (then it keeps its slot, and the worker fetches no more).
   * Returns the function that takes the slot back (idempotent), or null when none was lent.
   */
  lendSlot(): (() => void) | null;
  /** Jobs waiting on a provider now, their slots lent (svc_worker_provider_waits). */
  readonly lentSlots: number;
  /** Takes no more jobs (for good); `doNotWaitActive`: returns without waiting for those running. */
  pause(doNotWaitActive?: boolean): Promise<void>;
  /** Stops; `force`: without waiting for the jobs running (their locks lapse, another worker takes them). */
  close(force?: boolean): Promise<void>;
}

/** A step worker's lock and stalled-job settings for a lock of `lockMs` (the benchmarks' BullMQ peers take them too). */
export function stepWorkerSettings(lockMs: number): Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'> {
  return {
    lockDuration: lockMs,
    // Stalled jobs are looked for twice per lock period, so a dead worker's step comes back within ~1.5 locks.
    stalledInterval: Math.max(500, Math.floor(lockMs / 2)),
    // A job that stalls this often is failed rather than redelivered forever; the reaper and the run timeout take over.
    maxStalledCount: 5,
  };
}

function createWorker(options: StepWorkerOptions): PromptWorker {
  const worker = new PromptWorker(
    QUEUE_NAMES.steps,
    async (job: Job) => {
      const handler = options.handlers[job.name as keyof StepJobHandlers];
      if (!handler) throw new Error(`no handler for job "${job.name}" on the steps queue`);
      await handler(job.data, job);
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      ...stepWorkerSettings(options.lockMs),
      // Run once Redis accepted its start (startStepWorker).
      autorun: false,
    },
  );
  worker.on('failed', (job, err) => {
    options.log.warn({ jobId: job?.id, job: job?.name, err }, 'step job failed');
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) options.onEnded?.(job);
  });
  worker.on('completed', (job) => options.onEnded?.(job));
  worker.on('error', (err) => options.log.error({ err }, 'step worker error'));
  return worker;
}

/**
 * A BullMQ worker on the steps queue; any number of these may run, on any host.
 *
 * BullMQ asks Redis its version (INFO) once, when a worker's connection is first ready, and keeps
 * the answer: refused then (BUSY: a long script; NOPERM), the worker fails every fetch at once,
 * without a round trip, and its loop never yields (the process hangs at full CPU, no timer fires;
 * seen in the Redis-restart test, whose data-loading script outlasts Redis' busy threshold). So
 * the worker runs only once its start is through; a refused one is closed and a new one started,
 * after a pause that grows while refusals go on.
 */
export function startStepWorker(options: StepWorkerOptions): StepWorker {
  const stopped = new AbortController();
  let current = createWorker(options);
  const started = (async () => {
    for (let refusals = 0; ; refusals++) {
      try {
        await current.waitUntilReady();
        break;
      } catch (err) {
        if (stopped.signal.aborted) return current;
        options.log.error({ err, refusals: refusals + 1 }, 'Redis refused the step worker\'s start; starting another');
        await current.close(true).catch(() => undefined);
        await pause(doubled(RESTART_FIRST_MS, RESTART_LAST_MS, refusals), stopped.signal);
        if (stopped.signal.aborted) return current;
        current = createWorker(options);
      }
    }
    if (!stopped.signal.aborted) current.run().catch((err: unknown) => options.log.error({ err }, 'step worker stopped'));
    return current;
  })();
  return {
    started,
    lendSlot() {
      return current.lentSlots >= (options.lendable ?? 0) ? null : current.lendSlot();
    },
    get lentSlots() {
      return current.lentSlots;
    },
    async pause(doNotWaitActive) {
      stopped.abort();
      await current.pause(doNotWaitActive);
    },
    async close(force) {
      stopped.abort();
      // Not after \`started\`: a worker whose start waits for Redis closes now.
      await current.close(force);
    },
  };
}

/** Whether BullMQ handed this job out before (its worker went silent, or our code threw). */
export function isRedelivery(job: Job): boolean {
  return job.attemptsStarted > 1 || job.stalledCounter > 0;
}
