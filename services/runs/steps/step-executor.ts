import { setTimeout as sleep } from 'node:timers/promises';
import type { RunError, RunEvent } from '../../contract';
import { isAppError, isCallerError } from '../../platform/app-error';
import { RunOutbox, STALE_RESULT_DROPPED, type RunEffect } from '../events/run-outbox';
import type { CompleteStepResult } from '../ports';
import { HeldStart, startsAndEndsTogether } from './held-start';
import { LocalSteps } from './local-steps';
import type { CacheLookup } from './output-cache';
import type { PreparedStep } from './prepared-step';
import { callStepNode, type LendSlot } from './step-call';
import { StepAdmission, startOfJob, sumOfEstimates, withAttempt } from './step-admission';
import { StepBatch, StepCommit, type FinishedStep } from './step-batch';
import { attemptRefused, costOfFailure, isTransient, retryRefused, RUN_ERROR_CODES, stepError } from './step-errors';
import type { StepExecutorDeps } from './step-executor-deps';
import { cachedResult, checkResult, finishedStep } from './step-result';
import { nodeIdOf, type NextStep, type ReservedStep } from './step-start';

export type { RetryPolicy, StepExecutorDeps, StepObserver } from './step-executor-deps';

/** Most steps one job runs inline before it hands the chain back to the queue (fairness between runs). */
const MAX_INLINE_STEPS = 256;

/** A settling commit: the finished step, what was committed with it, and the dependent it meant to run next. */
interface Settled {
  done: FinishedStep;
  commit: StepCommit;
  result: CompleteStepResult;
  candidate: PreparedStep | undefined;
  runOutputs: Record<string, unknown> | undefined;
}

/**
 * Executes one step of a run (the `step.execute` job), and the chain of local steps it makes
 * ready. Read top to bottom, this class is a step's life (README.md beside this file): the
 * job → admit (context, inputs, estimate, reserve) → `step.started` → attempts (retries) → settle
 * (deferred into a batch, or committed) → what the commit made happen, released in order by the
 * run's outbox → the next step. The modules it imports are helpers that answer one question each.
 */
export class StepExecutor {
  private readonly outbox: RunOutbox;
  private readonly admission: StepAdmission;
  private readonly local: LocalSteps;
  /** Attempts a step may have in all (config keeps it at least `retry.attempts`). */
  private readonly maxAttempts: number;

  constructor(private readonly deps: StepExecutorDeps) {
    this.outbox = new RunOutbox(deps);
    this.maxAttempts = deps.retry.maxAttempts;
    this.admission = new StepAdmission({ ...deps, outbox: this.outbox, maxAttempts: this.maxAttempts });
    this.local = new LocalSteps(deps.mayRunInline);
  }

  /**
   * The job: runs its step, then, while a dependent it made ready may run inline (a local node:
   * bounded work in this process), that dependent in the same job with the predecessor's outputs
   * in hand. `redelivered`: BullMQ handed this job out again after its worker went silent.
   * `attemptToken`: the step was reserved with its run under this token.
   */
  async execute(runId: string, nodeId: string, options: { redelivered?: boolean; attemptToken?: string; group?: readonly string[]; lendSlot?: LendSlot } = {}): Promise<void> {
    let next: NextStep | null = { start: startOfJob(nodeId, options), outputsInHand: new Map() };
    // The job holds its run's abort signal, so that the attempts it runs one after another share one.
    this.deps.inFlight.hold(runId);
    try {
      for (let inline = 0; next; inline++) {
        if (inline >= MAX_INLINE_STEPS) {
          const { start } = next;
          const group = start.how === 'reserve' && start.group?.length ? new Map([[start.nodeId, start.group]]) : undefined;
          await this.outbox.release(runId, [{ kind: 'enqueue', nodeIds: [nodeIdOf(start)], groups: group }]);
          return;
        }
        const step = await this.admit(runId, next, inline + 1 < MAX_INLINE_STEPS, nodeId);
        if (!step) return;
        try {
          await this.deps.failpoints.hit('step.afterReserve', step.nodeId);
          next = await this.runAttempts(step, options.lendSlot);
        } finally {
          // Not released with an outcome (the result was dropped as stale, or the job failed): dropped.
          step.startHeld?.take();
        }
      }
    } finally {
      this.deps.inFlight.release(runId);
      // The job ends when its events are out (a failed append fails the job: BullMQ retries it).
      await this.outbox.drain(runId);
    }
  }

  /**
   * Admission: the step `next` names gets its attempt, according to its `StepStart` (its run's
   * context, its inputs and worst case, its reservation), and its `step.started` goes out (or is
   * held). Null when it does not run (now, or here); whatever stopped it is released already.
   */
  private async admit(runId: string, next: NextStep, mayContinue: boolean, job: string): Promise<ReservedStep | null> {
    const { start } = next;
    const nodeId = nodeIdOf(start);
    const context = await this.admission.contextOf(runId);
    if (!context) return null;
    const planned = context.prepared.plan.steps.get(nodeId);
    if (!planned || !context.prepared.workflow.nodes.has(nodeId)) {
      this.deps.log.warn({ runId, nodeId }, 'step job for a node that is not a step of its run; dropped');
      return null;
    }
    const { dependents } = planned;
    // Reserved already (by a batch's head, or by the predecessor's commit), inputs in hand; its start went out with that commit or is held by the batch.
    if (start.how === 'inBatch') return withAttempt(start.step, { context, runId, attemptToken: start.batch.headToken, dependents, batch: start.batch, mayContinue, job });
    if (start.how === 'reservedWithCommit') return withAttempt(start.step, { context, runId, attemptToken: start.attemptToken, dependents, batch: start.lease, mayContinue, job });

    // Inputs: those in hand, the rest from Postgres (the group's with the head's, in one read).
    const group = (start.how === 'reservedWithRun' ? undefined : start.group)?.filter((id) => id !== nodeId && context.prepared.plan.steps.has(id)) ?? [];
    const stepOutputs = new Map(next.outputsInHand);
    const needed = new Set([...planned.dependsOn, ...group.flatMap((id) => context.prepared.plan.steps.get(id)!.dependsOn)]);
    const missing = [...needed].filter((id) => !stepOutputs.has(id));
    for (const [id, output] of await this.deps.runs.stepInputs(runId, missing)) stepOutputs.set(id, output);
    // A predecessor not completed: the job came early (a duplicate, or a re-enqueue by the
    // reaper); the step is enqueued again when its last predecessor completes. Its group, ready
    // siblings with no jobs of their own, get theirs (a step that already ran refuses its job).
    if (planned.dependsOn.some((id) => !stepOutputs.has(id))) return this.enqueueAlone(runId, group);

    // Estimate, then reserve (the run's start reserved a lone local first step already).
    const prepared = await this.admission.prepare(context, nodeId, stepOutputs);
    if (!prepared) return this.enqueueAlone(runId, group);
    const members = this.admission.prepareGroup(context, group, stepOutputs);
    const reserved =
      start.how === 'reservedWithRun'
        ? { attemptToken: start.attemptToken, groupHeld: false }
        : await this.admission.reserve(runId, prepared, members.ready, { dependents: start.how === 'redelivered' ? dependents : [], group, job });
    if (reserved === null) return null;
    const { attemptToken } = reserved;
    const resumedJob = 'resumedJob' in reserved ? reserved.resumedJob : undefined;
    // Siblings that run in jobs of their own: those that cannot be prepared here, and all of them when their worst cases did not fit beside this step's.
    const inGroup = reserved.groupHeld ? members.ready : [];
    await this.enqueueAlone(runId, reserved.groupHeld ? members.alone : [...members.alone, ...members.ready.map((m) => m.nodeId)]);
    const batch = inGroup.length > 0 ? new StepBatch(attemptToken, sumOfEstimates(inGroup), inGroup) : undefined;

    // Started: a quick local step's start is held to go out with its outcome (HeldStart).
    const node = context.prepared.workflow.nodes.get(nodeId)!;
    if (node.role === 'platform' && this.deps.mayRunInline(node.uses) && startsAndEndsTogether(prepared.definition)) {
      return withAttempt(prepared, { context, runId, attemptToken, dependents, batch, mayContinue, job, startHeld: new HeldStart(nodeId) });
    }
    await this.outbox.release(runId, [{ kind: 'events', events: [{ type: 'step.started', nodeId }] }]);
    return withAttempt(prepared, { context, runId, attemptToken, dependents, batch, mayContinue, job, resumedJob });
  }

  /** Enqueues `nodeIds` (ready steps with no jobs of their own) each in a job of its own; null for `admit`. */
  private async enqueueAlone(runId: string, nodeIds: readonly string[]): Promise<null> {
    await this.outbox.release(runId, [{ kind: 'enqueue', nodeIds }]);
    return null;
  }

  /** Attempts: calls the node until an attempt succeeds (then settles it) or the step fails. */
  private async runAttempts(step: ReservedStep, lendSlot: LendSlot | undefined): Promise<NextStep | null> {
    const started = performance.now();
    const cached = await this.lookUpCache(step);
    if (cached?.outputs) {
      // A hit: no call, no charge; committed as any result, so reservations, events and batches go their usual way.
      const { costMicros, runOutputs } = cachedResult(step.context, step.nodeId, cached.outputs, (o) => this.deps.lifecycle.hasForeignRefs(o));
      return this.settle(step, { ...finishedStep(step, cached.outputs, costMicros, performance.now() - started), cached: true }, runOutputs);
    }
    for (let attempt = 1; ; attempt++) {
      let outcome = await callStepNode(step, this.deps, this.progressOf(step), lendSlot);
      const ms = performance.now() - started;
      if (outcome.ok) {
        // The call's fields written out: a property after an object spread is slow to define (see withAttempt in step-admission.ts).
        const call = { nodeId: step.nodeId, definition: step.definition, inputs: step.inputs, estimate: step.estimate, outputs: outcome.outputs };
        const checked = checkResult(step.context, call, (o) => this.deps.lifecycle.hasForeignRefs(o));
        if (checked.ok) {
          if (cached) await this.deps.outputCache.store(step, cached.key, outcome.outputs);
          return this.settle(step, finishedStep(step, outcome.outputs, checked.costMicros, ms), checked.runOutputs);
        }
        outcome = checked;
      }
      // Out before whatever the failure releases (the outbox keeps the order).
      await this.outbox.release(step.runId, [{ kind: 'events', events: step.startHeld?.take() ?? [] }]);
      const retrying = await this.afterFailure(step, outcome.err, attempt, ms);
      if (!retrying) return null;
      step = retrying;
      await sleep(this.deps.retry.baseDelayMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5));
    }
  }

  /** The step's place in the output cache (its outputs on a hit); undefined when it does not use the cache. */
  private async lookUpCache(step: ReservedStep): Promise<CacheLookup | undefined> {
    if (!this.deps.outputCache.applies(step)) return undefined;
    const { runId } = step.context;
    const signal = this.deps.inFlight.hold(runId);
    try {
      return await this.deps.outputCache.lookup(step, this.deps.artifactsFor(runId, signal));
    } finally {
      this.deps.inFlight.release(runId);
    }
  }

  /**
   * Where the progress of the step's attempt goes: held by the batch of a step run inside a lease
   * until that batch is committed, else released in order, behind its held start.
   */
  private progressOf(step: ReservedStep): (event: RunEvent) => void {
    const held = step.batch?.holding ? step.batch : undefined;
    if (held) return (event) => held.hold(event);
    return (event) => void this.outbox.release(step.context.runId, [{ kind: 'events', events: [...(step.startHeld?.take() ?? []), event] }]);
  }

  /** Records a failed attempt: the step, alone under its own attempt token, when it is retried; else null (it failed or stopped). */
  private async afterFailure(step: ReservedStep, err: unknown, attempt: number, ms: number): Promise<ReservedStep | null> {
    const { runId, nodeId, definition } = step;
    let { attemptToken } = step;
    if (step.batch?.holding) {
      // A step run inside a lease failed: what ran before it is committed, and it gets a
      // reservation of its own, under which its failure (or its next attempt) is recorded.
      const token = await this.commitHeld(step, step.batch, !isAppError(err, 'aborted_by_run'));
      if (token === null) return null;
      attemptToken = token;
    }
    const costMicros = costOfFailure(err, this.local.lostCharge(step));
    if (isAppError(err, 'aborted_by_run')) {
      // The run failed elsewhere: settle what this attempt spent; the run's terminal event is already out.
      await this.deps.steps.failStep({ runId, nodeId, attemptToken, costMicros, error: { code: RUN_ERROR_CODES.aborted, message: 'stopped because the run failed' }, ms });
      this.deps.observer.stepFinished(definition.spec.id, 'failed', ms / 1000, costMicros);
      return null;
    }
    let error: RunError;
    if (isTransient(err) && attempt < this.deps.retry.attempts) {
      // The retry holds the estimate alone: a lease this attempt had is given back.
      const retry = await this.deps.steps.retryAttempt({ runId, nodeId, attemptToken, costMicros, estimateMicros: step.estimate, lostChargeMicros: this.local.lostCharge(step), maxAttempts: this.maxAttempts });
      if (retry.ok) {
        this.deps.log.info({ runId, nodeId, attempt, err }, 'transient failure; retrying the step');
        this.deps.observer.stepFinished(definition.spec.id, 'retried', ms / 1000, costMicros);
        // The retry holds this step's estimate alone: its group's siblings go to other jobs.
        const plan = this.local.planJobs(step.context, step.batch?.takeUnrun() ?? [], false);
        await this.outbox.release(runId, [
          { kind: 'events', events: [{ type: 'step.progress', nodeId, message: `attempt ${attempt} failed (${stepError(err, nodeId).message}); retrying` }] },
          { kind: 'enqueue', nodeIds: plan.enqueue, groups: plan.groups },
        ]);
        // A new attempt submits anew: the job this one resumed (if any) has ended.
        return { ...step, attemptToken, batch: undefined, resumedJob: undefined };
      }
      if (retry.reason === 'not_owner') {
        // A stale attempt (its step was taken over) failed: its failure is dropped as its result would be.
        this.deps.log.info({ runId, nodeId, err }, STALE_RESULT_DROPPED);
        return null;
      }
      if (retry.reason === 'run_not_running') return null; // the run stopped
      error = retryRefused(retry.reason, err, nodeId, this.maxAttempts);
    } else {
      if (!isCallerError(err) && !isAppError(err, 'failed_after_call')) this.deps.log.error({ err, runId, nodeId }, 'node failed unexpectedly');
      error = stepError(err, nodeId);
    }
    await this.outbox.release(runId, [{ kind: 'failStep', nodeId, attemptToken, costMicros, ms, error }]);
    this.deps.observer.stepFinished(definition.spec.id, 'failed', ms / 1000, costMicros);
    return null;
  }

  /**
   * Commits what a batch holds, when the step running inside it failed: with `reserveFailed`,
   * that step is reserved in the same call, on its own, and its new attempt token returned. Null
   * when the batch could not be committed, or nothing was reserved.
   */
  private async commitHeld(step: ReservedStep, batch: StepBatch, reserveFailed: boolean): Promise<string | null> {
    const { runId, nodeId, estimate } = step;
    const commit = batch.commit();
    const next = reserveFailed ? { nodeId, estimateMicros: estimate } : undefined;
    const result = await this.deps.steps.completeStep({ runId, attemptToken: batch.headToken, ...commit.input(), next });
    if (!result.committed) return null;
    const refused = !commit.dropped(result) && result.next?.ok === false ? result.next : undefined;
    // Made ready and not reserved here (a stopped run has none): other jobs run them. The group's
    // siblings not run stay in the batch: a retry hands them on, a failure of the run skips them.
    const plan = this.local.planJobs(step.context, result.ready, false);
    await this.outbox.release(runId, [
      { kind: 'events', events: this.observe(commit, result) },
      { kind: 'enqueue', nodeIds: plan.enqueue, groups: plan.groups },
      refused && { kind: 'failRun', error: attemptRefused(refused.reason, nodeId, estimate, this.maxAttempts), nodeId },
    ]);
    return !commit.dropped(result) && result.next?.ok ? result.next.attemptToken : null;
  }

  /**
   * Settling: commits a finished step alone, or with what its batch holds, or defers it into the
   * batch when its only dependent (or its group's next sibling) runs now inside the lease.
   */
  private async settle(step: ReservedStep, done: FinishedStep, runOutputs: Record<string, unknown> | undefined): Promise<NextStep | null> {
    const { context, runId, batch } = step;
    const outputsInHand = new Map([[done.nodeId, done.output]]);
    await this.deps.failpoints.hit('step.beforeSettle', done.nodeId);
    const member = step.mayContinue ? batch?.nextMember() : undefined;
    if (batch && member) {
      // The group's next sibling runs now; this step commits with it later, its start held too.
      for (const event of step.startHeld?.take() ?? []) batch.hold(event);
      batch.defer(done, member);
      return { start: { how: 'inBatch', step: member, batch }, outputsInHand };
    }
    // Several local dependents (a fan-out) run as groups, the first one here under one reservation:
    // none of them is reserved alone with this commit.
    const candidate = this.local.severalLocal(context, done.dependents) ? undefined : this.admission.candidateAfter(context, done.dependents, outputsInHand);
    if (batch && candidate && step.mayContinue && batch.admits(done, candidate.estimate)) {
      // The only dependent fits in the lease: it runs now, and this step commits with it later.
      batch.defer(done, candidate);
      return { start: { how: 'inBatch', step: candidate, batch }, outputsInHand };
    }

    const commit = batch?.holding ? batch.commit(done) : StepCommit.of(done);
    const next = candidate && { nodeId: candidate.nodeId, estimateMicros: candidate.estimate, lease: step.mayContinue };
    const result = await this.deps.steps.completeStep({ runId, orgId: context.orgId, attemptToken: step.attemptToken, ...commit.input(), runOutputs, next });
    if (!result.committed) {
      this.deps.log.info({ runId, nodeId: commit.steps[0].nodeId }, STALE_RESULT_DROPPED);
      return null;
    }
    return this.afterCommit(step, { done, commit, result, candidate, runOutputs });
  }

  /** The outbox after a settling commit: releases what it made happen, in order; returns the step this job runs next, if any. */
  private async afterCommit(step: ReservedStep, settled: Settled): Promise<NextStep | null> {
    const { context, runId } = step;
    const { done, commit, result, candidate, runOutputs } = settled;
    const outputsInHand = new Map([[done.nodeId, done.output]]);
    const events = [...(step.startHeld?.take() ?? []), ...this.observe(commit, result)];
    // The run stopped while the batch ran: what it committed is out, its terminal event is someone else's.
    if (commit.dropped(result)) {
      await this.outbox.release(runId, [{ kind: 'events', events }]);
      return null;
    }
    if (candidate && result.next?.ok === false) {
      // The dependent this job meant to run next does not fit in the cap (or the run's hold): the run stops here.
      const error = attemptRefused(result.next.reason, candidate.nodeId, candidate.estimate, this.maxAttempts);
      await this.outbox.release(runId, [{ kind: 'events', events }, { kind: 'failRun', error, nodeId: candidate.nodeId }]);
      return null;
    }

    const reserved = candidate && result.next?.ok ? { step: candidate, attemptToken: result.next.attemptToken, leaseMicros: result.next.leaseMicros } : undefined;
    // Reserved with this commit, or else local steps now ready (a group's siblings not run among
    // them): this job runs the first of them next, with its group; the rest go in new jobs.
    const plan = this.local.planJobs(context, [...(step.batch?.takeUnrun() ?? []), ...result.ready], !reserved);
    // The group this job runs next is recorded under this job (head and siblings: no step of it has a job of its own).
    const groups = plan.here ? new Map([...plan.groups, [step.job, [plan.here.nodeId, ...plan.here.group]]]) : plan.groups;
    const enqueue: RunEffect = { kind: 'enqueue', nodeIds: plan.enqueue, groups };
    const released: RunEvent[] = reserved ? [...events, { type: 'step.started', nodeId: reserved.step.nodeId }] : events;
    await this.outbox.release(
      runId,
      result.runCompleted
        ? [{ kind: 'announceCompletion', outputs: runOutputs!, preceding: released, nodeId: done.nodeId }, enqueue]
        : [{ kind: 'events', events: released }, enqueue, result.remaining === 0 && { kind: 'completeRun', context, outputsInHand }],
    );

    // The next step: reserved with this commit (heading a batch with a lease), or a ready local one to reserve, or none.
    if (result.runCompleted) return null;
    if (!reserved) return plan.here ? { start: { how: 'reserve', nodeId: plan.here.nodeId, group: plan.here.group }, outputsInHand } : null;
    const lease = reserved.leaseMicros > 0 ? new StepBatch(reserved.attemptToken, reserved.leaseMicros) : undefined;
    return { start: { how: 'reservedWithCommit', step: reserved.step, attemptToken: reserved.attemptToken, lease }, outputsInHand };
  }

  /** The events of a commit, each step it committed told to metrics. */
  private observe(commit: StepCommit, result: CompleteStepResult): RunEvent[] {
    for (const { step, micros } of commit.committed(result)) this.deps.observer.stepFinished(step.specId, 'completed', step.ms / 1000, result.duplicate ? 0 : micros);
    return commit.events(result);
  }
}
