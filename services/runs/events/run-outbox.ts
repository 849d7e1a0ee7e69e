import type { RunError, RunEvent } from '../../contract';
import type { Failpoints } from '../../platform/failpoints';
import type { Logger } from '../../platform/logger';
import type { RunContext } from '../run-context-cache';
import type { RunLifecycle } from '../run-lifecycle';
import type { FailStepInput, RunEventAppender, StepFailureStore, StepQueuePort } from '../ports';

/**
 * What a committed transition leaves to do, in the order it is to be seen. Only `events` goes
 * through the run's event log directly; every other effect reaches the run's stream by another
 * path (another worker answering an enqueue with its own events, the lifecycle's terminal events)
 * and so waits until the events released before it are out.
 */
export type RunEffect =
  /** Appended behind the run's earlier events; not waited for. */
  | { kind: 'events'; events: readonly RunEvent[] }
  /** `groups`: by a job's node, the ready siblings that job runs after it (no jobs of their own), recorded for the reaper; a group's head may be a step this job runs next, not enqueued. */
  | { kind: 'enqueue'; nodeIds: readonly string[]; groups?: ReadonlyMap<string, readonly string[]> }
  /** Enqueued again, each unless its job is alive (a redelivery's dependents that a lost worker was running inline). */
  | { kind: 'requeue'; nodeIds: readonly string[]; /** The job (its node) whose earlier run held these steps and is gone: its groups' claims on them lapse. */ gone?: string }
  /** Fails the run (`RunLifecycle.fail`), for `nodeId` when given. */
  | { kind: 'failRun'; error: RunError; nodeId?: string }
  /** Fails the step of the attempt (`StepRepository.failStep`), then, after the events before it, announces what that changed. */
  | ({ kind: 'failStep' } & Omit<FailStepInput, 'runId'>)
  /** Completes a run whose steps are all completed, collecting its outputs (`RunLifecycle.complete`). */
  | { kind: 'completeRun'; context: RunContext; outputsInHand: ReadonlyMap<string, Record<string, unknown>> }
  /** Announces a run its last step's commit completed, after `preceding` (that step's events). */
  | { kind: 'announceCompletion'; outputs: Record<string, unknown>; preceding: readonly RunEvent[]; nodeId: string };

/** Logged when an attempt that no longer owns its step (taken over, or stopped with its run) reports its result: nothing of it is recorded. */
export const STALE_RESULT_DROPPED = 'attempt no longer owns its step; its result was dropped';

export interface RunOutboxDeps {
  events: RunEventAppender;
  queue: StepQueuePort;
  lifecycle: RunLifecycle;
  steps: StepFailureStore;
  failpoints: Failpoints;
  log: Logger;
}

/**
 * The one place that orders what the step executor makes happen after its transitions: per run,
 * events are appended in order without the caller waiting (the next step's database call
 * overlaps the append), and every other effect first waits for the events released before it.
 * So a run's stream shows a step's events before anything another worker or the lifecycle adds
 * because of them, and a failed append fails what comes after it (the job fails; BullMQ retries).
 */
export class RunOutbox {
  /** Per run, the last of the appends released and not yet done. */
  private readonly appends = new Map<string, Promise<void>>();

  constructor(private readonly deps: RunOutboxDeps) {}

  /**
   * Releases `effects` in order (see the class). An effect with nothing to do (no events, no
   * steps to enqueue, `false` or undefined) is skipped, so it never waits: a chain of local steps
   * goes on while its events are appended.
   */
  async release(runId: string, effects: readonly (RunEffect | undefined | false)[]): Promise<void> {
    for (const effect of effects) {
      if (!effect || isEmpty(effect)) continue;
      if (effect.kind === 'events') {
        this.append(runId, effect.events);
        continue;
      }
      // A step's failure is recorded before the wait (its own perform waits before announcing it):
      // an append that fails must not leave the step running, to be called again on redelivery.
      if (effect.kind !== 'failStep') await this.drain(runId);
      await this.perform(runId, effect);
    }
  }

  /** Waits until the run's released events are appended; rejects if one of them could not be. */
  async drain(runId: string): Promise<void> {
    await this.appends.get(runId);
  }

  private append(runId: string, events: readonly RunEvent[]): void {
    const previous = this.appends.get(runId) ?? Promise.resolve();
    const next = previous.then(() => this.deps.events.appendAll(runId, events)).then(() => undefined);
    this.appends.set(runId, next);
    const forget = () => {
      if (this.appends.get(runId) === next) this.appends.delete(runId);
    };
    next.then(forget, forget);
  }

  private async perform(runId: string, effect: Exclude<RunEffect, { kind: 'events' }>): Promise<void> {
    const { queue, lifecycle } = this.deps;
    switch (effect.kind) {
      case 'enqueue':
        await queue.enqueue(runId, effect.nodeIds, undefined, effect.groups);
        return;
      case 'requeue':
        await queue.requeue(runId, effect.nodeIds, effect.gone === undefined ? {} : { gone: effect.gone });
        return;
      case 'failRun':
        await lifecycle.fail(runId, effect.error, effect.nodeId);
        return;
      case 'failStep': {
        const { kind: _, ...attempt } = effect;
        const result = await this.deps.steps.failStep({ runId, ...attempt });
        if (!result.committed) {
          // The attempt no longer owns its step (taken over, or stopped with its run): its failure goes where its result would.
          this.deps.log.info({ runId, nodeId: effect.nodeId, error: effect.error }, STALE_RESULT_DROPPED);
          return;
        }
        await this.drain(runId);
        const { nodeId, error } = effect;
        if (result.runFailed) await lifecycle.announceFailure(runId, error, nodeId);
        else this.append(runId, [{ type: 'step.failed', nodeId, error }]);
        return;
      }
      case 'completeRun':
        await lifecycle.complete(effect.context, effect.outputsInHand);
        return;
      case 'announceCompletion':
        await this.deps.failpoints.hit('run.beforeAnnounce', effect.nodeId);
        await lifecycle.announceCompletion(runId, effect.outputs, effect.preceding);
        return;
    }
  }
}

function isEmpty(effect: RunEffect): boolean {
  if (effect.kind === 'events') return effect.events.length === 0;
  if (effect.kind === 'enqueue') return effect.nodeIds.length === 0 && !effect.groups?.size;
  if (effect.kind === 'requeue') return effect.nodeIds.length === 0;
  return false;
}
