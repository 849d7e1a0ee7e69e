import { randomUUID } from 'node:crypto';
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
  /**
   * Execute the first steps of several runs, each as its own `step.execute` would, side by side:
   * batch rows whose lone local first step was reserved with the run (each its `attemptToken`).
   * One job, one fair-dispatch entry and one slot for many quick rows (docs/batches.md, "Bundles").
   * Each step is recorded in its run's group record as claimed by this job (`bundleJobId`), so
   * that the reaper leaves it to the bundle while the bundle is alive.
   */
  'step.bundle': { queue: 'steps'; payload: { steps: BundledStep[]; trace?: Record<string, string>; orgId?: string } };
}

/** A step run by a `step.bundle` job. */
export interface BundledStep {
  runId: string;
  nodeId: string;
  attemptToken: string;
}

export type JobName = keyof JobCatalog;
export type JobPayload<N extends JobName> = JobCatalog[N]['payload'];

export const JOB_QUEUES: { [N in JobName]: QueueName } = {
  'step.execute': 'steps',
  'step.bundle': 'steps',
};

/**
 * Deterministic job id of a step, so enqueuing the same step twice is a no-op. BullMQ refuses
 * `:` in custom ids (and pure integers), hence `_` and the `step` prefix.
 */
export function stepJobId(runId: string, nodeId: string): string {
  return `step_${runId}_${Buffer.from(nodeId, 'utf8').toString('base64url')}`;
}

/** A new bundle's job id: no two bundles share one (a bundle is made once, by the feed turn that stored its runs). */
export function bundleJobId(): string {
  return `bundle_${randomUUID()}`;
}
