import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { QUEUE_NAMES, type JobCatalog, type JobName, type JobPayload } from './index';

/** One handler per job of the steps queue: exhaustive over the job catalog. */
export type StepJobHandlers = {
  [N in JobName as JobCatalog[N]['queue'] extends 'steps' ? N : never]: (payload: JobPayload<N>, job: Job) => Promise<void>;
};

export interface StepWorkerOptions {
  /** A dedicated connection: the worker blocks on it waiting for jobs. */
  connection: Redis;
  prefix: string;
  concurrency: number;
  /** A job whose worker is silent this long is presumed dead and redelivered (BullMQ stalled-job check). */
  lockMs: number;
  handlers: StepJobHandlers;
  log: Logger;
}

/**
 * A BullMQ worker that starts a job it has just taken before it looks for another. BullMQ's loop,
 * having taken a job, often asks Redis for the next one and waits for the answer before it
 * processes the first (test/integration/step-worker.test.ts: 4 and 5 jobs of 6): at low load a
 * round trip (an empty `moveToActive`) between a step's arrival and its start. The loop goes on
 * to process what it has when its `blockUntil` is set (a delayed job due); set after each job
 * taken, the loop starts the job and looks for the next while it runs (the look-up is the same;
 * only the wait is gone). Every answer of Redis resets it first (`updateDelays`). `blockUntil` is
 * BullMQ's own field: the test above fails should a release rename it.
 */
class PromptWorker extends Worker {
  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    const job = await super.moveToActive(token, name);
    // A time long past: "delayed jobs due", which only ends the loop's look-ahead.
    if (job) (this as unknown as { blockUntil: number }).blockUntil = 1;
    return job;
  }
}

/** A BullMQ worker on the steps queue; any number of these may run, on any host. */
export function startStepWorker(options: StepWorkerOptions): Worker {
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
      lockDuration: options.lockMs,
      // Stalled jobs are looked for twice per lock period, so a dead worker's step comes back within ~1.5 locks.
      stalledInterval: Math.max(500, Math.floor(options.lockMs / 2)),
      // A job that stalls this often is failed rather than redelivered forever; the reaper and the run timeout take over.
      maxStalledCount: 5,
      autorun: true,
    },
  );
  worker.on('failed', (job, err) => options.log.warn({ jobId: job?.id, job: job?.name, err }, 'step job failed'));
  worker.on('error', (err) => options.log.error({ err }, 'step worker error'));
  return worker;
}

/** Whether BullMQ handed this job out before (its worker went silent, or our code threw). */
export function isRedelivery(job: Job): boolean {
  return job.attemptsStarted > 1 || job.stalledCounter > 0;
}
