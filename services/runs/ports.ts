import type { RunEvent } from '../contract';
import type { OutputCacheRepository } from '../store';

/** Where run events go: the run event bus (`RunEventBus` satisfies it). */
export interface RunEventAppender {
  append(runId: string, event: RunEvent): Promise<number>;
  /** Several events in one round trip, consecutively numbered. */
  appendAll(runId: string, events: readonly RunEvent[]): Promise<number>;
}

/** Where ready steps go: the step queue (`StepQueue` satisfies it). */
export interface StepEnqueuer {
  /** `tokens`: the attempt tokens of steps reserved with the run, carried by their jobs; `groups`: by a job's node, the siblings it runs after it. */
  enqueue(runId: string, nodeIds: readonly string[], tokens?: ReadonlyMap<string, string>, groups?: ReadonlyMap<string, readonly string[]>): Promise<void>;
}

/** The step queue as the executor uses it: enqueue, and enqueue again what lost its job. */
export interface StepQueuePort extends StepEnqueuer {
  requeue(runId: string, nodeIds: readonly string[], options?: { gone?: string }): Promise<string[]>;
}

/** Tells every worker process that a run stopped, so its in-flight steps abort. */
export type RunAbortPublisher = (runId: string) => Promise<void>;

/** Where the output cache's entries live (docs/runs.md, Output caching). */
export type OutputCacheStore = Pick<OutputCacheRepository, 'get' | 'put'>;
