import type { RunEvent } from '../../contract';
import { setTimeout as pause } from 'node:timers/promises';
import { withProviderScope, type ArtifactStore, type ProviderJobRecord } from '../../nodes';
import { providerJobKey, type ProviderWebhookUrls } from '../../platform/provider-webhook-urls';
import { inSpan, SPAN_ATTRIBUTES } from '../../platform/tracing';
import type { StepTransitionStore } from '../ports';
import type { InFlightSteps } from './in-flight-steps';
import type { ProviderJobPolls } from './provider-job-polls';
import type { ProviderWaits } from './provider-waits';
import { abortedByRun } from './step-errors';
import type { ReservedStep } from './step-start';

/** One attempt's outcome. */
export type AttemptOutcome = { ok: true; outputs: Record<string, unknown> } | { ok: false; err: unknown };

/** What a call of a node needs of the process: the run's abort signal and its artifact store. */
export interface StepCallDeps {
  inFlight: InFlightSteps;
  artifactsFor(runId: string, signal: AbortSignal): ArtifactStore;
  /** The node's provider requests: the shared limits, and the worker slot lent while they wait. */
  providers?: ProviderWaits;
  /** Where a provider job the node submits is recorded with the attempt. */
  steps: Pick<StepTransitionStore, 'recordProviderJob'>;
  /** How parked provider jobs wait for their polls; absent: each on a timer of its own, no webhooks. */
  providerJobs?: ProviderJobWaits;
}

/** The worker's shared poll timer, and the webhooks providers are given when the deployment takes them. */
export interface ProviderJobWaits {
  polls: ProviderJobPolls;
  /** Signs the URLs providers call back; absent: no webhooks (`PROVIDER_WEBHOOK_BASE_URL` unset). */
  webhooks?: ProviderWebhookUrls;
  /** The poll interval of a job whose provider was given a webhook: a fallback should the call never come. */
  webhookPollMs: number;
}

/** Lends the job's worker slot back while its step waits on a provider; null when the worker lends no more. */
export type LendSlot = () => (() => void) | null;

/**
 * One call of the step's node, abortable by the run (a call aborted so fails with `aborted_by_run`),
 * in a trace span; each progress message goes to `progress` as a `step.progress` event.
 */
export async function callStepNode(step: ReservedStep, deps: StepCallDeps, progress: (event: RunEvent) => void, lendSlot?: LendSlot): Promise<AttemptOutcome> {
  const { runId } = step.context;
  const signal = deps.inFlight.hold(runId);
  const say = (message: string) => progress({ type: 'step.progress', nodeId: step.nodeId, message: String(message).slice(0, 500) });
  const scope = deps.providers?.scopeFor(step.context.orgId, lendSlot, say);
  try {
    const node = { [SPAN_ATTRIBUTES.runId]: runId, [SPAN_ATTRIBUTES.nodeId]: step.nodeId, [SPAN_ATTRIBUTES.node]: step.definition.spec.id };
    const outputs = await inSpan('node.execute', { attributes: node }, () =>
      withProviderScope(scope, () => step.definition.execute(step.inputs, { signal, artifacts: deps.artifactsFor(runId, signal), progress: say, providerJob: providerJobOf(step, deps, () => scope?.parked()) })),
    );
    return { ok: true, outputs };
  } catch (err) {
    return { ok: false, err: signal.aborted ? abortedByRun() : err };
  } finally {
    scope?.end();
    deps.inFlight.release(runId);
  }
}

/** The step's provider job: the one a lost attempt recorded, and where this attempt records its own. */
function providerJobOf(step: ReservedStep, deps: StepCallDeps, parked: () => void): ProviderJobRecord {
  const { runId } = step.context;
  // A resumed job is waited on from the call's start; a new one once submitted.
  if (step.resumedJob !== undefined) parked();
  const jobs = deps.providerJobs;
  const key = providerJobKey(runId, step.nodeId);
  return {
    resumed: step.resumedJob,
    async submitted(job) {
      parked();
      // Not recorded (the step was taken over meanwhile): this attempt's result is dropped at its commit, as any stale attempt's.
      await deps.steps.recordProviderJob({ runId, nodeId: step.nodeId, attemptToken: step.attemptToken, job });
    },
    webhookUrl: (provider) => jobs?.webhooks?.urlFor(provider, key),
    nextPoll(pollMs, signal) {
      if (!jobs) return pause(pollMs, undefined, { signal });
      // A resumed job was given a webhook by the attempt that submitted it, if this deployment takes them.
      return jobs.polls.wait(key, jobs.webhooks ? Math.max(pollMs, jobs.webhookPollMs) : pollMs, signal);
    },
  };
}
