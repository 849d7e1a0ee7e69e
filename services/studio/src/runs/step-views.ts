import type { RunError, StepStatus } from '../../../contract';

/**
 * What the canvas shows of one step while a run is watched or looked back at: its status, the
 * progress it reported, and once done its cost, time or error. The live run panel builds these from
 * the run's events, the run detail page from the run record; the graph view colours nodes by them.
 */
export interface StepView {
  status: StepStatus;
  /** 0..1 from `step.progress`, when the node reports it. */
  progress?: number;
  /** The progress message, when the node sends one. */
  message?: string;
  costUsd?: number;
  ms?: number;
  /** Answered from the output cache (its `step.completed` said `usage.cached`): nothing ran, nothing was charged. */
  cached?: boolean;
  error?: RunError;
}

export type StepViews = Readonly<Record<string, StepView>>;
