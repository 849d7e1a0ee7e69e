import type { QueueName } from './queue-names';

/**
 * Every job the workers run: its queue and payload. Payloads carry ids, never large data; the
 * worker's handler map is typed against this catalog, so a missing handler is a compile error.
 */
export interface JobCatalog {
  /**
   * Execute one node of a run. `attemptToken`: the step was reserved with the run (its attempt
   * token), so the first delivery runs it without reserving; a redelivery reserves as usual.
   * `trace`: the W3C trace context of whoever enqueued it (`traceparent`), when tracing is on.
   * `group`: ready sibling steps (local nodes, no job of their own) the job runs after its own,
   * inside its reservation (services/runs/steps/README.md, "Groups"). `orgId`: the run's
   * organization, under fair scheduling (its slot is freed when the job ends; docs/scheduling.md).
   */
  'step.execute': { queue: 'steps'; payload: { runId: string; nodeId: string; attemptToken?: string; group?: string[]; trace?: Record<string, string>; orgId?: string } };
}

export type JobName = keyof JobCatalog;
export type JobPayload<N extends JobName> = JobCatalog[N]['payload'];

export const JOB_QUEUES: { [N in JobName]: QueueName } = {
  'step.execute': 'steps',
};

/**
 * Deterministic job id of a step, so enqueuing the same step twice is a no-op. BullMQ refuses
 * `:` in custom ids (and pure integers), hence `_` and the `step` prefix.
 */
export function stepJobId(runId: string, nodeId: string): string {
  return `step_${runId}_${Buffer.from(nodeId, 'utf8').toString('base64url')}`;
}
