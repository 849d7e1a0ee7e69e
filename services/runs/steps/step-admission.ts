import { resolveStepInputs } from '../../engine';
import type { NodeDefinition } from '../../nodes';
import { AppError, isAppError, isCallerError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { StepTransitionStore } from '../ports';
import { nodeOfRun, type RunContext, type RunContextCache } from '../run-context-cache';
import type { RunOutbox } from '../events/run-outbox';
import { attemptRefused, stepError } from './step-errors';
import { lostChargeOf } from './step-result';
import type { PreparedStep } from './prepared-step';
import type { OutputsInHand, ReservedStep, StepStart } from './step-start';

export interface StepAdmissionDeps {
  steps: Pick<StepTransitionStore, 'reserve'>;
  contexts: RunContextCache;
  findNode(id: string): NodeDefinition | undefined;
  mayRunInline(uses: string): boolean;
  log: Logger;
  outbox: RunOutbox;
  /** Attempts a step may have in all. */
  maxAttempts: number;
}

/**
 * The parts of a step's admission (README.md, "A step's life"), each answering one
 * question for the executor, which calls them in order: its run's context, its inputs and worst
 * case (and its group's), its reservation. What stops a step in one of them (a run that cannot
 * be prepared, inputs that cannot be used, a refused reservation) is released through the run's
 * outbox there, and the answer is null.
 */
export class StepAdmission {
  constructor(private readonly deps: StepAdmissionDeps) {}

  /** The run's context; none for a run that does not exist, or cannot be prepared (then it fails). */
  async contextOf(runId: string): Promise<RunContext | null> {
    try {
      const context = await this.deps.contexts.get(runId);
      if (!context) this.deps.log.warn({ runId }, 'step job for a run that does not exist; dropped');
      return context;
    } catch (err) {
      if (!isAppError(err, 'run_unpreparable')) throw err;
      await this.deps.outbox.release(runId, [{ kind: 'failRun', error: { code: 'run_unrecoverable', message: err.message } }]);
      return null;
    }
  }

  /** The step's inputs and worst case; null when it cannot run (a missing value waits; unusable inputs fail the run). */
  async prepare(context: RunContext, nodeId: string, stepOutputs: OutputsInHand): Promise<PreparedStep | null> {
    const node = context.prepared.workflow.nodes.get(nodeId)!;
    const definition = node.role === 'platform' ? nodeOfRun(context, node.uses, (id) => this.deps.findNode(id)) : undefined;
    try {
      if (!definition) throw new AppError({ code: 'not_found', message: `node "${nodeId}" uses "${node.uses}", which this service cannot run` });
      const inputs = resolveStepInputs(node, { workflow: context.prepared.workflow, inputs: context.inputs, stepOutputs });
      return { nodeId, definition, inputs, estimate: definition.estimate(inputs) };
    } catch (err) {
      if (isAppError(err, 'missing_value')) return null;
      // Inputs that only turned out wrong at run time (a STRUCTURED value of the wrong type):
      // the step fails before any money is held.
      if (!isCallerError(err)) this.deps.log.error({ err, runId: context.runId, nodeId }, 'step could not be prepared');
      await this.deps.outbox.release(context.runId, [{ kind: 'failRun', error: stepError(err, nodeId), nodeId }]);
      return null;
    }
  }

  /**
   * A group's siblings that can run inside their head's reservation: local nodes whose inputs are
   * in hand, with their worst cases. The others run in jobs of their own (`alone`), where a
   * failure to prepare is reported as usual; a sibling whose predecessors are not all completed
   * is not ready, and is left to its last predecessor's commit.
   */
  prepareGroup(context: RunContext, group: readonly string[], stepOutputs: OutputsInHand): { ready: PreparedStep[]; alone: string[] } {
    const ready: PreparedStep[] = [];
    const alone: string[] = [];
    for (const id of group) {
      const prepared = this.preparedLocal(context, id, stepOutputs);
      if (prepared === NOT_READY) continue;
      if (prepared) ready.push(prepared);
      else alone.push(id);
    }
    return { ready, alone };
  }

  /**
   * The dependent a job will run next if the commit makes it ready: a local node whose only
   * step inputs are in hand, so its inputs and estimate are known before the commit, which then
   * reserves it too. None when no dependent qualifies (it is then found among the ready ones).
   */
  candidateAfter(context: RunContext, dependents: readonly string[], outputsInHand: OutputsInHand): PreparedStep | undefined {
    for (const id of dependents) {
      const prepared = this.preparedLocal(context, id, outputsInHand);
      if (prepared && prepared !== NOT_READY) return prepared;
    }
    return undefined;
  }

  /**
   * Step `id` prepared to run in this job (its inputs and worst case), when it is a local node
   * whose predecessors' outputs are all in `stepOutputs`; NOT_READY when one is missing; null when
   * it is no local node, or its inputs cannot be used here (its own job reports that: it fails
   * the step with the reason).
   */
  private preparedLocal(context: RunContext, id: string, stepOutputs: OutputsInHand): PreparedStep | typeof NOT_READY | null {
    const { workflow, plan } = context.prepared;
    const node = workflow.nodes.get(id);
    const planned = plan.steps.get(id);
    if (!node || !planned) return null;
    if (!planned.dependsOn.every((d) => stepOutputs.has(d))) return NOT_READY;
    const definition = node.role === 'platform' && this.deps.mayRunInline(node.uses) ? nodeOfRun(context, node.uses, (id) => this.deps.findNode(id)) : undefined;
    if (!definition) return null;
    try {
      const inputs = resolveStepInputs(node, { workflow, inputs: context.inputs, stepOutputs });
      return { nodeId: id, definition, inputs, estimate: definition.estimate(inputs) };
    } catch {
      return null;
    }
  }

  /**
   * Reserves the step's worst case against the cap, and its `group`'s beside it when that fits
   * too: its attempt token and what was held for the group, or null when refused. `requeue`: what
   * to enqueue again when another attempt has the step: the dependents a lost worker may have been
   * running inline, and this step's group, which a lost worker may have been running (one of them
   * running under its dead attempt, heading the rest): each gets a job of its own, the claims of
   * groups recorded under `job` (this job's node) given up.
   */
  async reserve(runId: string, step: PreparedStep, group: readonly PreparedStep[], requeue: { dependents: readonly string[]; group: readonly string[]; job: string }): Promise<{ attemptToken: string; groupHeld: boolean; resumedJob?: unknown } | null> {
    const { nodeId, estimate } = step;
    const { maxAttempts, outbox } = this.deps;
    const lostChargeMicros = lostChargeOf(step.definition, estimate, this.deps.mayRunInline);
    const reserved = await this.deps.steps.reserve({ runId, nodeId, estimateMicros: estimate, lostChargeMicros, maxAttempts, groupMicros: sumOfEstimates(group) });
    if (reserved.ok) return { attemptToken: reserved.attemptToken, groupHeld: group.length > 0 && reserved.groupHeld, ...(reserved.providerJob === undefined ? {} : { resumedJob: reserved.providerJob }) };
    // Given up as this job's (`gone`): the steps a lost worker ran inline and the groups it ran
    // went with it, and this attempt runs none of its group now; groups of other jobs keep theirs.
    if (reserved.reason === 'step_not_runnable') await outbox.release(runId, [{ kind: 'requeue', nodeIds: [...requeue.dependents, ...requeue.group], gone: requeue.job }]);
    if (reserved.reason === 'run_not_running' || reserved.reason === 'step_not_runnable') return null; // the run stopped, or another attempt has the step
    const error = attemptRefused(reserved.reason, nodeId, estimate, maxAttempts);
    // A lost attempt taken over: the step is ours, holding nothing; failing it settles what the lost attempt is charged.
    const { attemptToken } = reserved;
    await outbox.release(runId, [attemptToken === undefined ? { kind: 'failRun', error, nodeId } : { kind: 'failStep', nodeId, attemptToken, costMicros: 0, ms: null, error }]);
    return null;
  }
}

/** preparedLocal's answer for a step whose predecessors' outputs are not all in hand. */
const NOT_READY = 'notReady';

/** The worst cases of `steps` together: what a group's head holds for its siblings. */
export function sumOfEstimates(steps: readonly PreparedStep[]): number {
  return steps.reduce((sum, step) => sum + step.estimate, 0);
}

/** How the step of a job gets its attempt: reserved with its run (first delivery only), taken over (a redelivery), or reserved here, with its group. */
export function startOfJob(nodeId: string, options: { redelivered?: boolean; attemptToken?: string; group?: readonly string[] }): StepStart {
  const group = options.group?.length ? { group: options.group } : {};
  if (options.redelivered) return { how: 'redelivered', nodeId, ...group };
  if (options.attemptToken) return { how: 'reservedWithRun', nodeId, attemptToken: options.attemptToken };
  return { how: 'reserve', nodeId, ...group };
}

/**
 * The prepared step with its attempt. Written out field by field rather than as
 * `{ ...step, context, ... }`: Node 20's V8 defines each property that follows an object spread on
 * a slow path, about 1.5 µs each (15-20 µs for these eight, measured), and a fan-out builds one per
 * step (B3: 1,001 of them a run, about 6% of the process' CPU).
 */
export function withAttempt(step: PreparedStep, attempt: Omit<ReservedStep, keyof PreparedStep>): ReservedStep {
  const { context, runId, attemptToken, dependents, batch, mayContinue, job, startHeld, resumedJob } = attempt;
  return { nodeId: step.nodeId, definition: step.definition, inputs: step.inputs, estimate: step.estimate, context, runId, attemptToken, dependents, batch, mayContinue, job, startHeld, resumedJob };
}
