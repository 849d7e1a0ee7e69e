import { setTimeout as sleep } from 'node:timers/promises';
import type { RunEvent } from '../contract';
import { MissingValueError, resolveStepInputs } from '../engine';
import type { ArtifactStore, NodeDefinition } from '../nodes';
import { AppError } from '../platform/app-error';
import type { Failpoints } from '../platform/failpoints';
import type { Logger } from '../platform/logger';
import type { CompleteStepResult, RunRepository, StepRepository } from '../store';
import type { InFlightSteps } from './in-flight-steps';
import { UnpreparableRunError, type RunContext, type RunContexts } from './run-contexts';
import type { RunLifecycle } from './run-lifecycle';
import type { RunEventAppender, StepQueuePort } from './ports';
import { RunEventPipe } from './run-event-pipe';
import { committedEvents, committedSteps, fitsBatch, openBatch, type Batch, type FinishedStep, type Lane } from './step-batch';
import { AbortedByRun, attemptRefused, costOfFailure, FailedAfterCall, isTransient, retryRefused, RUN_ERROR_CODES, stepError } from './step-errors';
import { checkResult, lostChargeOf } from './step-result';

/** How transient provider failures are retried inside a step. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 = no retry), of one delivery of the step's job. */
  attempts: number;
  /** Attempts of the step in all, in-step retries and redeliveries together (default: `attempts` + 2). */
  maxAttempts?: number;
  /** Delay before the first retry; doubled each time, with ±25 % jitter. */
  baseDelayMs: number;
}

/** What the executor reports for metrics. */
export interface StepObserver {
  stepFinished(nodeUses: string, outcome: 'completed' | 'failed', seconds: number, costMicros: number): void;
}

export interface StepExecutorDeps {
  runs: RunRepository;
  steps: StepRepository;
  contexts: RunContexts;
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
  failpoints?: Failpoints;
  observer?: StepObserver;
}

/** A step whose inputs and worst case are known before it is reserved. */
interface StartedStep {
  nodeId: string;
  definition: NodeDefinition;
  inputs: Record<string, unknown>;
  estimate: number;
}

/** A step this job runs next, inline, with the outputs of its predecessor in hand. */
interface Continuation {
  nodeId: string;
  known: ReadonlyMap<string, Record<string, unknown>>;
  /**
   * Reserved already, with its predecessor's commit (its `step.started` is out), or `virtual`:
   * counted against the lease of `batch` (its `step.started` waits in the batch): run it straight away.
   */
  started?: StartedStep & { attemptToken: string; virtual?: boolean };
  batch?: Batch;
  /** The attempt token of a reservation made with the run (the job's first delivery): used instead of reserving. */
  reservedWith?: string;
}

/** Most steps one job runs inline before it hands the chain back to the queue (fairness between runs). */
const MAX_INLINE_STEPS = 256;

/** A step whose attempt succeeded, before its commit. */
interface DoneStep {
  nodeId: string;
  definition: NodeDefinition;
  inputs: Record<string, unknown>;
  estimate: number;
  outputs: Record<string, unknown>;
  /** What the attempt cost (the node's price of its result). */
  costMicros: number;
  /** The run's outputs, when this step's outputs are all they read. */
  runOutputs: Record<string, unknown> | undefined;
  attemptToken: string;
  ms: number;
  dependents: readonly string[];
}

/** One attempt's outcome. */
type AttemptOutcome = { ok: true; outputs: Record<string, unknown> } | { ok: false; err: unknown };

/**
 * Executes one step of a run (the `step.execute` job), following DESIGN.md "Execution, step by
 * step": inputs from literals and finished predecessors → reserve the worst case against the cap
 * → execute (abortable, progress as events) → settle under the attempt's token → `step.completed`
 * → enqueue the dependents that became ready → complete the run after its last step. Node
 * failures become `step.failed` + `run.failed` (transient ones are retried first, each attempt
 * reserved and charged); the job itself fails only when our own infrastructure does (BullMQ
 * retries it, and `reserve` decides whether the step still needs running).
 */
export class StepExecutor {
  private readonly pipe: RunEventPipe;
  /** Attempts a step may have in all (config keeps it at least `retry.attempts`). */
  private readonly maxAttempts: number;

  constructor(private readonly deps: StepExecutorDeps) {
    this.pipe = new RunEventPipe(deps.events);
    this.maxAttempts = deps.retry.maxAttempts ?? deps.retry.attempts + 2;
  }

  /**
   * Runs the step of a `step.execute` job, then, while a dependent it made ready may run inline
   * (a local node: bounded work in this process), that dependent in the same job with the
   * predecessor's outputs in hand: a chain of local steps costs no queue round trip per step.
   * Other ready dependents are enqueued for any worker. `redelivered`: BullMQ handed this job
   * out again after its worker went silent, so a dependent that worker was running inline may
   * be orphaned: those are enqueued again (the reservation decides who runs them).
   * `attemptToken`: the step was reserved with its run under this token (on the job's first
   * delivery only; a redelivery reserves, taking the step over).
   */
  async execute(runId: string, nodeId: string, options: { redelivered?: boolean; attemptToken?: string } = {}): Promise<void> {
    let next: Continuation | null = { nodeId, known: new Map(), ...(options.attemptToken && !options.redelivered ? { reservedWith: options.attemptToken } : {}) };
    let redelivered = options.redelivered ?? false;
    try {
      for (let inline = 0; next; inline++) {
        if (inline >= MAX_INLINE_STEPS) {
          await this.pipe.flush(runId);
          await this.deps.queue.enqueue(runId, [next.nodeId]);
          return;
        }
        next = await this.executeOne(runId, next, redelivered, inline + 1 < MAX_INLINE_STEPS);
        redelivered = false;
      }
    } finally {
      // The job ends when its events are out (a failed append fails the job: BullMQ retries it).
      await this.pipe.flush(runId);
    }
  }

  private async executeOne(runId: string, step: Continuation, redelivered: boolean, mayDefer: boolean): Promise<Continuation | null> {
    const { nodeId, known } = step;
    let context: RunContext | null;
    try {
      context = await this.deps.contexts.get(runId);
    } catch (err) {
      if (!(err instanceof UnpreparableRunError)) throw err;
      await this.pipe.flush(runId);
      await this.deps.lifecycle.fail(runId, { code: 'run_unrecoverable', message: err.message });
      return null;
    }
    if (!context) {
      this.deps.log.warn({ runId, nodeId }, 'step job for a run that does not exist; dropped');
      return null;
    }
    const planned = context.prepared.plan.steps.get(nodeId);
    const node = context.prepared.workflow.nodes.get(nodeId);
    if (!planned || !node) {
      this.deps.log.warn({ runId, nodeId }, 'step job for a node that is not a step of its run; dropped');
      return null;
    }

    if (step.started) {
      const { definition, inputs, estimate, attemptToken, virtual = false } = step.started;
      await this.deps.failpoints?.hit('step.afterReserve', nodeId);
      return this.runAttempts(context, nodeId, definition, inputs, estimate, attemptToken, planned.dependents, { batch: step.batch, virtual, mayDefer });
    }

    const stepOutputs = new Map(known);
    const missing = planned.dependsOn.filter((id) => !known.has(id));
    for (const [id, output] of await this.deps.runs.stepInputs(runId, missing)) stepOutputs.set(id, output);
    // A predecessor not completed: the job came early (a duplicate, or a re-enqueue by the
    // reaper); the step is enqueued again when its last predecessor completes.
    if (planned.dependsOn.some((id) => !stepOutputs.has(id))) return null;

    const definition = node.role === 'platform' ? this.deps.findNode(node.uses) : undefined;
    let inputs: Record<string, unknown>;
    let estimate: number;
    try {
      if (!definition) throw new AppError({ code: 'not_found', message: `node "${nodeId}" uses "${node.uses}", which this service cannot run` });
      inputs = resolveStepInputs(node, { workflow: context.prepared.workflow, inputs: context.inputs, stepOutputs });
      estimate = definition.estimate(inputs);
    } catch (err) {
      if (err instanceof MissingValueError) return null;
      // Inputs that only turned out wrong at run time (a STRUCTURED value of the wrong type):
      // the step fails before any money is held.
      await this.failBeforeStart(context, nodeId, err);
      return null;
    }

    const reserved = step.reservedWith
      ? { ok: true as const, attemptToken: step.reservedWith }
      : await this.deps.steps.reserve({ runId, nodeId, estimateMicros: estimate, lostChargeMicros: lostChargeOf(definition!, estimate, this.deps.mayRunInline), maxAttempts: this.maxAttempts });
    if (!reserved.ok) {
      await this.pipe.flush(runId);
      if (reserved.reason === 'cap_exceeded' || reserved.reason === 'insufficient_credit' || reserved.reason === 'attempts_exhausted') {
        const error = attemptRefused(reserved.reason, nodeId, estimate, this.maxAttempts);
        // A lost attempt taken over: the step is ours, holding nothing; failing it settles what the lost attempt is charged.
        if (reserved.attemptToken !== undefined) await this.failStep(runId, nodeId, reserved.attemptToken, 0, null, error);
        else await this.deps.lifecycle.fail(runId, error, nodeId);
      } else if (reserved.reason === 'step_not_runnable' && redelivered) {
        await this.deps.queue.requeue(runId, planned.dependents);
      }
      // run_not_running / step_not_runnable: the run stopped, or another attempt has the step.
      return null;
    }

    this.pipe.post(runId, [{ type: 'step.started', nodeId }]);
    await this.deps.failpoints?.hit('step.afterReserve', nodeId);
    return this.runAttempts(context, nodeId, definition!, inputs, estimate, reserved.attemptToken, planned.dependents, { virtual: false, mayDefer });
  }

  private async runAttempts(
    context: RunContext,
    nodeId: string,
    definition: NodeDefinition,
    inputs: Record<string, unknown>,
    estimate: number,
    attemptToken: string,
    dependents: readonly string[],
    lane: Lane,
  ): Promise<Continuation | null> {
    const { runId } = context;
    const started = performance.now();
    const lostCharge = lostChargeOf(definition, estimate, this.deps.mayRunInline);
    for (let attempt = 1; ; attempt++) {
      let outcome = await this.attempt(runId, nodeId, definition, inputs, lane.virtual ? lane.batch : undefined);
      const ms = performance.now() - started;
      if (outcome.ok) {
        const checked = checkResult(context, { nodeId, definition, inputs, estimate, outputs: outcome.outputs }, (o) => this.deps.lifecycle.hasForeignRefs(o));
        if (checked.ok) return this.settle(context, { nodeId, definition, inputs, estimate, outputs: outcome.outputs, attemptToken, ms, dependents, ...checked }, lane);
        outcome = checked;
      }
      const { err } = outcome;
      if (lane.virtual) {
        // A step run inside a lease failed: what ran before it is committed, and it gets a
        // reservation of its own, under which its failure (or its next attempt) is recorded.
        const token = await this.commitHeld(context, lane.batch!, err instanceof AbortedByRun ? undefined : { nodeId, estimate });
        if (token === null) return null;
        attemptToken = token;
      }
      lane = { virtual: false, mayDefer: lane.mayDefer };
      if (err instanceof AbortedByRun) {
        // The run failed elsewhere: settle what this attempt spent; the run's terminal event is already out.
        await this.deps.steps.failStep({ runId, nodeId, attemptToken, costMicros: costOfFailure(err, lostCharge), error: { code: RUN_ERROR_CODES.aborted, message: 'stopped because the run failed' }, ms });
        this.deps.observer?.stepFinished(definition.spec.id, 'failed', ms / 1000, 0);
        return null;
      }
      if (isTransient(err) && attempt < this.deps.retry.attempts) {
        // The retry holds the estimate alone: a lease this attempt had is given back.
        const retry = await this.deps.steps.retryAttempt({
          runId,
          nodeId,
          attemptToken,
          costMicros: costOfFailure(err, lostCharge),
          estimateMicros: estimate,
          lostChargeMicros: lostCharge,
          maxAttempts: this.maxAttempts,
        });
        if (retry.ok) {
          this.deps.log.info({ runId, nodeId, attempt, err }, 'transient failure; retrying the step');
          this.pipe.post(runId, [{ type: 'step.progress', nodeId, message: `attempt ${attempt} failed (${stepError(err, nodeId).message}); retrying` }]);
          const delay = this.deps.retry.baseDelayMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5);
          await sleep(delay);
          continue;
        }
        if (retry.reason === 'run_not_running' || retry.reason === 'not_owner') return null; // the run stopped or the step was taken over
        await this.failStep(runId, nodeId, attemptToken, costOfFailure(err, lostCharge), ms, retryRefused(retry.reason, err, nodeId, this.maxAttempts));
        this.deps.observer?.stepFinished(definition.spec.id, 'failed', ms / 1000, 0);
        return null;
      }
      if (!(err instanceof AppError) && !(err instanceof FailedAfterCall)) this.deps.log.error({ err, runId, nodeId }, 'node failed unexpectedly');
      await this.failStep(runId, nodeId, attemptToken, costOfFailure(err, lostCharge), ms, stepError(err, nodeId));
      this.deps.observer?.stepFinished(definition.spec.id, 'failed', ms / 1000, 0);
      return null;
    }
  }

  /**
   * One call of the node, abortable by the run, its progress reported as events in order (held
   * in `held`, the batch of a step run inside a lease, until that batch is committed).
   */
  private async attempt(runId: string, nodeId: string, definition: NodeDefinition, inputs: Record<string, unknown>, held?: Batch): Promise<AttemptOutcome> {
    const controller = this.deps.inFlight.start(runId);
    try {
      const outputs = await definition.execute(inputs, {
        signal: controller.signal,
        artifacts: this.deps.artifactsFor(runId, controller.signal),
        // Through the run's event pipe: in order, and all before step.completed.
        progress: (message) => {
          const event: RunEvent = { type: 'step.progress', nodeId, message: String(message).slice(0, 500) };
          if (held) held.events.push(event);
          else this.pipe.post(runId, [event]);
        },
      });
      return { ok: true, outputs };
    } catch (err) {
      return { ok: false, err: controller.signal.aborted ? new AbortedByRun() : err };
    } finally {
      this.deps.inFlight.end(runId, controller);
    }
  }

  private async settle(context: RunContext, done: DoneStep, lane: Lane): Promise<Continuation | null> {
    const { runId } = context;
    const { nodeId, definition, outputs, dependents, runOutputs } = done;
    const known = new Map([[nodeId, outputs]]);
    const finished: FinishedStep = {
      nodeId,
      specId: definition.spec.id,
      costMicros: done.costMicros,
      estimateMicros: done.estimate,
      output: outputs,
      ms: done.ms,
      dependents,
    };
    const candidate = this.nextCandidate(context, dependents, known);
    await this.deps.failpoints?.hit('step.beforeSettle', nodeId);

    const { batch } = lane;
    if (batch && candidate && fitsBatch(batch, lane, finished, candidate.estimate)) {
      // The only dependent fits in the lease: it runs now, and this step commits with it later.
      if (lane.virtual) batch.followers.push(finished);
      else batch.head = finished;
      batch.leaseLeft -= candidate.estimate;
      batch.events.push({ completed: nodeId }, { type: 'step.started', nodeId: candidate.nodeId });
      return { nodeId: candidate.nodeId, known, started: { ...candidate, attemptToken: done.attemptToken, virtual: true }, batch };
    }

    const head = lane.virtual ? batch!.head! : finished;
    const followers = lane.virtual ? [...batch!.followers, finished] : [];
    const result = await this.deps.steps.completeStep({
      runId,
      nodeId: head.nodeId,
      attemptToken: done.attemptToken,
      costMicros: head.costMicros,
      output: head.output,
      ms: head.ms,
      dependents: head.dependents,
      followers,
      runOutputs,
      next: candidate && { nodeId: candidate.nodeId, estimateMicros: candidate.estimate, lease: lane.mayDefer },
    });
    if (!result.committed) {
      this.deps.log.info({ runId, nodeId: head.nodeId }, 'attempt no longer owns its step; its result was dropped');
      return null;
    }
    const completed = committedEvents(this.observeCommitted(result, [head, ...followers]), result.duplicate, lane.virtual ? batch!.events : [], nodeId);
    if (result.followerCharges.length < followers.length) {
      // The run stopped while the batch ran: what it committed is out, its terminal event is someone else's.
      if (completed.length > 0) this.pipe.post(runId, completed);
      return null;
    }

    if (candidate && result.next && !result.next.ok) {
      // The dependent this job meant to run next does not fit in the cap (or the run's hold): the run stops here.
      if (completed.length > 0) this.pipe.post(runId, completed);
      await this.pipe.flush(runId);
      await this.deps.lifecycle.fail(runId, attemptRefused(result.next.reason, candidate.nodeId, candidate.estimate, this.maxAttempts), candidate.nodeId);
      return null;
    }
    const reserved = candidate && result.next?.ok ? result.next : undefined;
    const started = reserved && candidate ? { ...candidate, attemptToken: reserved.attemptToken } : undefined;
    // Reserved with this commit, or else another local step made ready: this job runs it next.
    const inline = started?.nodeId ?? result.ready.find((id) => this.deps.mayRunInline(context.prepared.workflow.nodes.get(id)!.uses));
    const queued = result.ready.filter((id) => id !== inline);
    const events = started ? [...completed, { type: 'step.started', nodeId: started.nodeId } satisfies RunEvent] : completed;
    if (result.runCompleted) {
      await this.pipe.flush(runId);
      await this.deps.failpoints?.hit('run.beforeAnnounce', nodeId);
      await Promise.all([this.deps.lifecycle.announceCompletion(runId, runOutputs!, events), queued.length > 0 ? this.deps.queue.enqueue(runId, queued) : undefined]);
      return null;
    }
    // A chain goes on without waiting for its events: the pipe keeps them in order, and the next
    // step's database call overlaps this append.
    if (events.length > 0) this.pipe.post(runId, events);
    if (queued.length > 0 || result.remaining === 0) await this.pipe.flush(runId);
    // Enqueued after this step's events are out, so another worker's step.started comes after them.
    if (queued.length > 0) await this.deps.queue.enqueue(runId, queued);
    if (result.remaining === 0) await this.deps.lifecycle.complete(context, known);
    if (inline === undefined) return null;
    const leased = reserved && reserved.leaseMicros > 0 ? openBatch(reserved.attemptToken, reserved.leaseMicros) : undefined;
    return { nodeId: inline, known, started, batch: leased };
  }

  /** The steps a commit committed, each told to metrics. */
  private observeCommitted(result: CompleteStepResult, steps: readonly FinishedStep[]): { step: FinishedStep; micros: number }[] {
    const committed = committedSteps(result, steps);
    for (const { step, micros } of committed) this.deps.observer?.stepFinished(step.specId, 'completed', step.ms / 1000, result.duplicate ? 0 : micros);
    return committed;
  }

  /**
   * Commits what a batch ran so far (its head and followers), when a step inside it failed: with
   * `next`, that step is reserved in the same call, on its own, and its new attempt token returned.
   * Null when the batch could not be committed, or nothing was reserved.
   */
  private async commitHeld(context: RunContext, batch: Batch, next?: { nodeId: string; estimate: number }): Promise<string | null> {
    const { runId } = context;
    const head = batch.head!;
    const result = await this.deps.steps.completeStep({
      runId,
      nodeId: head.nodeId,
      attemptToken: batch.headToken,
      costMicros: head.costMicros,
      output: head.output,
      ms: head.ms,
      dependents: head.dependents,
      followers: batch.followers,
      next: next && { nodeId: next.nodeId, estimateMicros: next.estimate },
    });
    if (!result.committed) return null;
    const events = committedEvents(this.observeCommitted(result, [head, ...batch.followers]), result.duplicate, batch.events);
    if (events.length > 0) this.pipe.post(runId, events);
    if (result.ready.length > 0) {
      // Made ready and not reserved here (the run stopped has none): another job runs them.
      await this.pipe.flush(runId);
      await this.deps.queue.enqueue(runId, result.ready);
    }
    if (result.followerCharges.length < batch.followers.length || !next) return null;
    if (result.next?.ok) return result.next.attemptToken;
    if (result.next) {
      await this.pipe.flush(runId);
      await this.deps.lifecycle.fail(runId, attemptRefused(result.next.reason, next.nodeId, next.estimate, this.maxAttempts), next.nodeId);
    }
    return null;
  }

  /**
   * The dependent this job will run next if the commit makes it ready: a local node whose only
   * step inputs are in hand, so its inputs and estimate are known before the commit, which then
   * reserves it too. None when no dependent qualifies (it is then found among the ready ones).
   */
  private nextCandidate(context: RunContext, dependents: readonly string[], known: ReadonlyMap<string, Record<string, unknown>>): StartedStep | undefined {
    const { workflow, plan } = context.prepared;
    for (const id of dependents) {
      const node = workflow.nodes.get(id);
      const planned = plan.steps.get(id);
      if (!node || !planned || node.role !== 'platform' || !this.deps.mayRunInline(node.uses)) continue;
      if (!planned.dependsOn.every((d) => known.has(d))) continue;
      const definition = this.deps.findNode(node.uses);
      if (!definition) continue;
      try {
        const inputs = resolveStepInputs(node, { workflow, inputs: context.inputs, stepOutputs: known });
        return { nodeId: id, definition, inputs, estimate: definition.estimate(inputs) };
      } catch {
        // Inputs it cannot use: its own job reports that (it fails the step with the reason).
        continue;
      }
    }
    return undefined;
  }

  private async failStep(runId: string, nodeId: string, attemptToken: string, costMicros: number, ms: number | null, error: { code: string; message: string }): Promise<void> {
    const result = await this.deps.steps.failStep({ runId, nodeId, attemptToken, costMicros, error, ms });
    if (!result.committed) return;
    await this.pipe.flush(runId);
    if (result.runFailed) await this.deps.lifecycle.announceFailure(runId, error, nodeId);
    else this.pipe.post(runId, [{ type: 'step.failed', nodeId, error }]);
  }

  /** Fails a step that cannot start (its inputs are unusable): it holds nothing, and its run fails. */
  private async failBeforeStart(context: RunContext, nodeId: string, err: unknown): Promise<void> {
    const error = stepError(err, nodeId);
    if (!(err instanceof AppError)) this.deps.log.error({ err, runId: context.runId, nodeId }, 'step could not be prepared');
    await this.pipe.flush(context.runId);
    await this.deps.lifecycle.fail(context.runId, error, nodeId);
  }
}
