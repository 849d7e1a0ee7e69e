import type { RunEvent } from '../contract';

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

/** One output cache entry as it is stored (docs/runs.md, Output caching). */
export interface OutputCacheEntryInput {
  orgId: string;
  key: string;
  node: string;
  outputs: Record<string, unknown>;
  /** The run whose step computed the outputs (the entry goes with it). */
  runId: string;
  expiresAt: Date;
  /** Most entries the organization keeps: beyond it, its least recently used ones are evicted. */
  maxEntries: number;
}

/** Where the output cache's entries live (`OutputCacheRepository` satisfies it). */
export interface OutputCacheStore {
  /** The unexpired entry's outputs (its last use now), or null. */
  get(orgId: string, key: string): Promise<Record<string, unknown> | null>;
  /** Stores (or replaces) an entry; answers how many entries of the organization it evicted. */
  put(entry: OutputCacheEntryInput): Promise<{ evicted: number }>;
}
