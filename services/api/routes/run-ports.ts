import type { RunError, RunEvent, RunStatus, StepStatus } from '../../contract';

/**
 * The ports of the run read routes: what they need from the run store and the event bus, no
 * more. `RunRepository` and `RunEventBus` satisfy them as they are; tests may pass fakes.
 * Money is integer micro-USD, as the store keeps it.
 */

/** A step of a stored run. */
export interface StoredStep {
  nodeId: string;
  status: StepStatus;
  costMicros: number;
  ms: number | null;
  error: RunError | null;
}

/** A run as listed: no steps, no outputs. */
export interface StoredRunSummary {
  id: string;
  status: RunStatus;
  error: RunError | null;
  capMicros: number;
  spentMicros: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A run with its steps and (once completed) its outputs. */
export interface StoredRun extends StoredRunSummary {
  orgId: string;
  outputs: Record<string, unknown> | null;
  steps: readonly StoredStep[];
}

/** The position of a run in the listing (newest first). */
export interface RunListPosition {
  createdAt: Date;
  id: string;
}

/** Port: reads runs, never another organization's. */
export interface RunReader {
  /** The run if it exists and belongs to `orgId`, else null (also for an id that is not a UUID). */
  getRun(runId: string, orgId: string): Promise<StoredRun | null>;
  /** A page of `orgId`'s runs, newest first, starting after `after`; `next` is null on the last page. */
  listRuns(
    orgId: string,
    options: { limit: number; after?: RunListPosition; status?: RunStatus },
  ): Promise<{ runs: StoredRunSummary[]; next: RunListPosition | null }>;
}

/** One event of a run's log with its per-run sequence number. */
export interface SequencedRunEvent {
  seq: number;
  event: RunEvent;
}

/** Port: a run's event log, replayed and then followed live. */
export interface RunEventSource {
  /**
   * Events with seq > `afterSeq`, in order and each once; ends after the terminal event, at once
   * when resumed at or after it, or when `signal` aborts.
   */
  events(runId: string, options: { afterSeq?: number; signal?: AbortSignal }): AsyncIterable<SequencedRunEvent>;
  /** Seq of the run's last logged event; 0 when its log never existed or has expired. */
  lastSeq(runId: string): Promise<number>;
}
