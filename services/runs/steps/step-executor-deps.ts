import type { ArtifactStore, NodeDefinition } from '../../nodes';
import type { Failpoints } from '../../platform/failpoints';
import type { Logger } from '../../platform/logger';
import type { RunEventAppender, StepInputStore, StepQueuePort, StepTransitionStore } from '../ports';
import type { RunContextCache } from '../run-context-cache';
import type { RunLifecycle } from '../run-lifecycle';
import type { InFlightSteps } from './in-flight-steps';
import type { OutputCache } from './output-cache';
import type { ProviderWaits } from './provider-waits';
import type { ProviderJobWaits } from './step-call';

/** How transient provider failures are retried inside a step. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 = no retry), of one delivery of the step's job. */
  attempts: number;
  /** Attempts of the step in all, in-step retries and redeliveries together (`STEP_MAX_ATTEMPTS`). */
  maxAttempts: number;
  /** Delay before the first retry; doubled each time, with ±25 % jitter. */
  baseDelayMs: number;
}

/** What the executor reports for metrics: each attempt's end, and what it was charged. */
export interface StepObserver {
  /** `retried`: the attempt failed transiently and another attempt of the step follows. */
  stepFinished(nodeUses: string, outcome: 'completed' | 'failed' | 'retried', seconds: number, costMicros: number): void;
}

/** What the step executor is given: the stores' ports, the run's services, and its policies. */
export interface StepExecutorDeps {
  runs: StepInputStore;
  steps: StepTransitionStore;
  contexts: RunContextCache;
  lifecycle: RunLifecycle;
  events: RunEventAppender;
  queue: StepQueuePort;
  inFlight: InFlightSteps;
  /** The definition of a platform node by id. */
  findNode(id: string): NodeDefinition | undefined;
  /** The artifact store of one run (outputs under its prefix), for one attempt: `signal` stops its remote reads. */
  artifactsFor(runId: string, signal: AbortSignal): ArtifactStore;
  /**
   * Whether a step of this node may run inline, in the job of its predecessor: local nodes with
   * bounded work. Steps of slow nodes (providers) get their own job, so the queue sees them alive.
   */
  mayRunInline(uses: string): boolean;
  retry: RetryPolicy;
  log: Logger;
  /** Fault injection for the fault suite (`step.afterReserve`, `step.beforeSettle`, `run.beforeAnnounce`). */
  failpoints: Failpoints;
  observer: StepObserver;
  /** Answers eligible steps from earlier identical calls, and keeps what they return (docs/runs.md, Output caching). */
  outputCache: OutputCache;
  /** Provider requests under the shared limits, the job's slot lent while they wait; absent: neither. */
  providers?: ProviderWaits;
  /** The worker's shared poll timer for parked provider jobs, and their webhooks; absent: each job polls on its own timer. */
  providerJobs?: ProviderJobWaits;
}
