import { resolveStepInputs } from '../../engine';
import type { NodeDefinition } from '../../nodes';
import { AppError, isAppError, isCallerError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { RunRepository, StepRepository } from '../../store';
import type { RunContext, RunContextCache } from '../run-context-cache';
import { HeldStart, startsAndEndsTogether } from './held-start';
import type { RunOutbox } from '../events/run-outbox';
import { StepBatch } from './step-batch';
import { attemptRefused, stepError } from './step-errors';
import { lostChargeOf } from './step-result';
import type { PreparedStep } from './prepared-step';
import { nodeIdOf, type NextStep, type OutputsInHand, type ReservedStep, type StepStart } from './step-start';

export interface StepAdmissionDeps {
  runs: RunRepository;
  steps: StepRepository;
  contexts: RunContextCache;
  findNode(id: string): NodeDefinition | undefined;
  mayRunInline(uses: string): boolean;
  log: Logger;
  outbox: RunOutbox;
  /** Attempts a step may have in all. */
  maxAttempts: number;
}

/**
 * How a step gets its attempt (ARCHITECTURE.md, "A step's life"): its run's context, its inputs
 * and worst case, then its reservation, according to its `StepStart`. Whatever stops a step here
 * (a refused reservation, inputs that cannot be used) is released through the run's outbox.
 */
export class StepAdmission {
  constructor(private readonly deps: StepAdmissionDeps) {}

  /** The step `next` names, with its attempt, run by the job of node `job`; null when it does not run (now, or here). */
  async admit(runId: string, next: NextStep, mayContinue: boolean, job: string): Promise<ReservedStep | null> {
    const { start } = next;
    const nodeId = nodeIdOf(start);
    const context = await this.contextOf(runId);
    if (!context) return null;
    const planned = context.prepared.plan.steps.get(nodeId);
    if (!planned || !context.prepared.workflow.nodes.has(nodeId)) {
      this.deps.log.warn({ runId, nodeId }, 'step job for a node that is not a step of its run; dropped');
      return null;
    }
    const { dependents } = planned;
    if (start.how === 'inBatch') return withAttempt(start.step, { context, runId, attemptToken: start.batch.headToken, dependents, batch: start.batch, mayContinue, job });
    if (start.how === 'reservedWithCommit') return withAttempt(start.step, { context, runId, attemptToken: start.attemptToken, dependents, batch: start.lease, mayContinue, job });

    const group = (start.how === 'reservedWithRun' ? undefined : start.group)?.filter((id) => id !== nodeId && context.prepared.plan.steps.has(id)) ?? [];
    const stepOutputs = new Map(next.outputsInHand);
    const needed = new Set([...planned.dependsOn, ...group.flatMap((id) => context.prepared.plan.steps.get(id)!.dependsOn)]);
    const missing = [...needed].filter((id) => !stepOutputs.has(id));
    for (const [id, output] of await this.deps.runs.stepInputs(runId, missing)) stepOutputs.set(id, output);
    // A predecessor not completed: the job came early (a duplicate, or a re-enqueue by the
    // reaper); the step is enqueued again when its last predecessor completes. Its group, ready
    // siblings with no jobs of their own, get theirs (a step that already ran refuses its job).
    if (planned.dependsOn.some((id) => !stepOutputs.has(id))) return this.alone(runId, group);
    const prepared = await this.prepare(context, nodeId, stepOutputs);
    if (!prepared) return this.alone(runId, group);
    const members = this.prepareGroup(context, group, stepOutputs);
    const reserved =
      start.how === 'reservedWithRun'
        ? { attemptToken: start.attemptToken, groupHeld: false }
        : await this.reserve(runId, prepared, members.ready, { dependents: start.how === 'redelivered' ? dependents : [], group, job });
    if (reserved === null) return null;
    const { attemptToken } = reserved;
    // Siblings that run in jobs of their own: those that cannot be prepared here, and all of them when their worst cases did not fit beside this step's.
    const inGroup = reserved.groupHeld ? members.ready : [];
    await this.alone(runId, reserved.groupHeld ? members.alone : [...members.alone, ...members.ready.map((m) => m.nodeId)]);
    const batch = inGroup.length > 0 ? new StepBatch(attemptToken, sumOfEstimates(inGroup), inGroup) : undefined;
    const node = context.prepared.workflow.nodes.get(nodeId)!;
    if (node.role === 'platform' && this.deps.mayRunInline(node.uses) && startsAndEndsTogether(prepared.definition)) {
      return withAttempt(prepared, { context, runId, attemptToken, dependents, batch, mayContinue, job, startHeld: new HeldStart(nodeId) });
    }
    await this.deps.outbox.release(runId, [{ kind: 'events', events: [{ type: 'step.started', nodeId }] }]);
    return withAttempt(prepared, { context, runId, attemptToken, dependents, batch, mayContinue, job });
  }

  /** Enqueues `nodeIds` (ready steps with no jobs of their own) each in a job of its own; null for `admit`. */
  private async alone(runId: string, nodeIds: readonly string[]): Promise<null> {
    await this.deps.outbox.release(runId, [{ kind: 'enqueue', nodeIds }]);
    return null;
  }

  /**
   * A group's siblings that can run inside their head's reservation: local nodes whose inputs are
   * in hand, with their worst cases. The others run in jobs of their own (`alone`), where a
   * failure to prepare is reported as usual; a sibling whose predecessors are not all completed
   * is not ready, and is left to its last predecessor's commit.
   */
  private prepareGroup(context: RunContext, group: readonly string[], stepOutputs: OutputsInHand): { ready: PreparedStep[]; alone: string[] } {
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
    const definition = node.role === 'platform' && this.deps.mayRunInline(node.uses) ? this.deps.findNode(node.uses) : undefined;
    if (!definition) return null;
    try {
      const inputs = resolveStepInputs(node, { workflow, inputs: context.inputs, stepOutputs });
      return { nodeId: id, definition, inputs, estimate: definition.estimate(inputs) };
    } catch {
      return null;
    }
  }

  /** What an attempt of the step is charged when it is lost or stopped with its cost unknown. */
  lostChargeOf(step: PreparedStep): number {
    return lostChargeOf(step.definition, step.estimate, this.deps.mayRunInline);
  }

  /** The run's context; none for a run that does not exist, or cannot be prepared (then it fails). */
  private async contextOf(runId: string): Promise<RunContext | null> {
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
  private async prepare(context: RunContext, nodeId: string, stepOutputs: OutputsInHand): Promise<PreparedStep | null> {
    const node = context.prepared.workflow.nodes.get(nodeId)!;
    const definition = node.role === 'platform' ? this.deps.findNode(node.uses) : undefined;
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
   * Reserves the step's worst case against the cap, and its `group`'s beside it when that fits
   * too: its attempt token and what was held for the group, or null when refused. `requeue`: what
   * to enqueue again when another attempt has the step: the dependents a lost worker may have been
   * running inline, and this step's group, which a lost worker may have been running (one of them
   * running under its dead attempt, heading the rest): each gets a job of its own, the claims of
   * groups recorded under `job` (this job's node) given up.
   */
  private async reserve(runId: string, step: PreparedStep, group: readonly PreparedStep[], requeue: { dependents: readonly string[]; group: readonly string[]; job: string }): Promise<{ attemptToken: string; groupHeld: boolean } | null> {
    const { nodeId, estimate } = step;
    const { maxAttempts, outbox } = this.deps;
    const reserved = await this.deps.steps.reserve({ runId, nodeId, estimateMicros: estimate, lostChargeMicros: this.lostChargeOf(step), maxAttempts, groupMicros: sumOfEstimates(group) });
    if (reserved.ok) return { attemptToken: reserved.attemptToken, groupHeld: group.length > 0 && reserved.groupHeld };
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

function sumOfEstimates(steps: readonly PreparedStep[]): number {
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
function withAttempt(step: PreparedStep, attempt: Omit<ReservedStep, keyof PreparedStep>): ReservedStep {
  const { context, runId, attemptToken, dependents, batch, mayContinue, job, startHeld } = attempt;
  return { nodeId: step.nodeId, definition: step.definition, inputs: step.inputs, estimate: step.estimate, context, runId, attemptToken, dependents, batch, mayContinue, job, startHeld };
}
