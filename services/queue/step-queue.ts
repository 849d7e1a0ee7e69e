import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { stepJobId, type JobPayload } from './job-catalog';
import { carriedContext } from '../platform/tracing';
import { QUEUE_NAMES } from './queue-names';

/** Deliveries of a step job whose executor threw (our infrastructure failing), and the first pause between them (doubled each time). */
export const STEP_JOB_ATTEMPTS = 8;
export const STEP_JOB_FIRST_BACKOFF_MS = 500;

export interface StepQueueOptions {
  /** Connection for the queue's commands (may be shared; never a subscriber connection). */
  connection: Redis;
  /** BullMQ key prefix: one per deployment (and per test file) sharing a Redis. */
  prefix: string;
}

/**
 * Enqueues step jobs. A step's job id is derived from its run and node, so enqueueing a step
 * that is already waiting is a no-op; finished jobs are removed, so a step the reaper re-enqueues
 * gets a fresh job (the executor's `reserve` refuses steps that already ran).
 */
export class StepQueue {
  readonly queue: Queue;

  constructor(options: StepQueueOptions) {
    this.queue = new Queue(QUEUE_NAMES.steps, {
      connection: options.connection,
      prefix: options.prefix,
      defaultJobOptions: {
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
      },
    });
  }

  /** Enqueues one job per node of the run, in one round trip; `tokens` are carried by the jobs of steps reserved with the run. */
  async enqueue(runId: string, nodeIds: readonly string[], tokens?: ReadonlyMap<string, string>): Promise<void> {
    if (nodeIds.length === 0) return;
    const trace = carriedContext();
    const payload = (nodeId: string): JobPayload<'step.execute'> => {
      const attemptToken = tokens?.get(nodeId);
      return { runId, nodeId, ...(attemptToken === undefined ? {} : { attemptToken }), ...(trace ? { trace } : {}) };
    };
    if (nodeIds.length === 1) {
      // One job: a plain add, without addBulk's MULTI.
      const nodeId = nodeIds[0]!;
      await this.queue.add('step.execute', payload(nodeId), { jobId: stepJobId(runId, nodeId) });
      return;
    }
    await this.queue.addBulk(nodeIds.map((nodeId) => ({ name: 'step.execute', data: payload(nodeId), opts: { jobId: stepJobId(runId, nodeId) } })));
  }

  /**
   * Enqueues steps again for the reaper, skipping those whose job is alive (waiting, active,
   * delayed): a job that failed (our infrastructure failed it every time) or finished is removed
   * first, since its id would otherwise make the new enqueue a no-op. Returns the steps enqueued.
   */
  async requeue(runId: string, nodeIds: readonly string[]): Promise<string[]> {
    const requeued: string[] = [];
    for (const nodeId of nodeIds) {
      const job = await this.queue.getJob(stepJobId(runId, nodeId));
      if (job) {
        const state = await job.getState();
        if (state !== 'failed' && state !== 'completed' && state !== 'unknown') continue;
        await job.remove().catch(() => undefined);
      }
      requeued.push(nodeId);
    }
    await this.enqueue(runId, requeued);
    return requeued;
  }

  /** Jobs waiting, delayed, active and failed (kept a day; for metrics and the reaper). */
  async counts(): Promise<{ waiting: number; active: number; delayed: number; failed: number }> {
    const counts = await this.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
    return { waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0, delayed: counts.delayed ?? 0, failed: counts.failed ?? 0 };
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
