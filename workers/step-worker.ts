import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { QUEUE_NAMES, type JobCatalog, type JobName, type JobPayload } from '../services/queue';

/** One handler per job of the steps queue: exhaustive over the job catalog. */
export type StepJobHandlers = {
  [N in JobName as JobCatalog[N]['queue'] extends 'steps' ? N : never]: (payload: JobPayload<N>, job: Job) => Promise<void>;
};

export interface StepWorkerOptions {
  connection: Redis;
  concurrency: number;
  handlers: StepJobHandlers;
  log: Logger;
}

/** A BullMQ worker on the steps queue; any number of these may run, on any host. */
export function startStepWorker(options: StepWorkerOptions): Worker {
  const worker = new Worker(
    QUEUE_NAMES.steps,
    async (job: Job) => {
      const handler = options.handlers[job.name as keyof StepJobHandlers];
      if (!handler) throw new Error(`no handler for job "${job.name}" on the steps queue`);
      await handler(job.data, job);
    },
    { connection: options.connection, concurrency: options.concurrency, autorun: true },
  );
  worker.on('failed', (job, err) => options.log.warn({ jobId: job?.id, job: job?.name, err }, 'step job failed'));
  worker.on('error', (err) => options.log.error({ err }, 'step worker error'));
  return worker;
}
