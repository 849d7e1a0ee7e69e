import { randomUUID } from 'node:crypto';
import type { ArtifactInput, OutputCacheMode, RunError, Workflow } from '../../contract';
import type { PreparedWorkflow } from '../../engine';
import type { PinnedNodes } from '../../nodes';
import { outageError } from '../../platform/app-error';
import { settleWithin } from '../../platform/bounded-wait';
import { annotateSpan, SPAN_ATTRIBUTES } from '../../platform/tracing';
import type { Failpoints } from '../../platform/failpoints';
import type { Logger } from '../../platform/logger';
import type { RunCreationStore } from '../ports';
import { createRunContext, type RunContextCache } from '../run-context-cache';
import type { RunLifecycle } from '../run-lifecycle';
import type { RunEventAppender, StepEnqueuer } from '../ports';
import { planJobs } from '../steps/step-groups';
import { localFirstStep, type FirstStepNodes } from './local-first-step';

/** A checked run request: the engine has validated the workflow and the inputs. */
export interface RunRequest {
  /** The run's id, when the caller chose it (to follow its events before it exists); else one is made. */
  runId?: string;
  orgId: string;
  userId: string;
  tokenId: string | null;
  definition: Workflow;
  prepared: PreparedWorkflow;
  /** Inputs after `checkRunInputs` (defaults filled, kinds set). */
  inputs: Record<string, ArtifactInput>;
  capMicros: number;
  workflowId?: string | null;
  workflowVersionId?: string | null;
  /** Refuse with `insufficient_credit` unless the organization's balance is positive (checked as the run is stored). */
  requireCredit?: boolean;
  /** The run is cancelled if still unfinished this long after it is stored. */
  maxDurationSeconds?: number;
  /** How the run's steps use the output cache; absent: auto. */
  outputCache?: OutputCacheMode;
  /** An idempotency key: when unexpired, its run is answered and nothing is stored or started. */
  idempotency?: { key: string; requestHash: string };
  /** Where the run's events are POSTed, and which. */
  webhook?: { url: string; events: readonly string[] };
  /** The catalog file nodes it uses, as they are now: stored with it, and what its steps run. */
  pinned?: PinnedNodes;
  /** The schedule whose tick starts it. */
  scheduleId?: string;
}

export interface RunStarterDeps {
  runs: RunCreationStore;
  events: RunEventAppender;
  queue: StepEnqueuer;
  lifecycle: RunLifecycle;
  /** The process's run contexts, seeded so a worker in the same process skips reloading the run. */
  contexts: RunContextCache;
  /**
   * The process's nodes: a run whose only first step is a local node (bounded work,
   * no provider) is stored with that step already reserved, and its job carries the attempt
   * token, so the worker starts it without a database round trip.
   */
  nodes: FirstStepNodes;
  log: Logger;
  /** Fault injection (`run.announce`, before `run.started` is appended); none in production. */
  failpoints?: Failpoints;
  /**
   * Longest the start waits for Redis (REQUEST_REDIS_WAIT_MS): for `run.started`
   * (then the run is failed unstarted and the caller answered 503), then for its first steps'
   * enqueue (then the reaper enqueues them). Redis' client queues commands while it reconnects,
   * so without it a request waits for as long as Redis is away.
   */
  redisWaitMs: number;
  /** Told of each run stored (not of a request attached to its idempotency key's run): metrics. */
  onStored?: () => void;
}

/**
 * Starts a checked run: stores it (running) with one step row per executable node in one
 * statement, appends `run.started` (seq 1), then enqueues the steps with no dependency. A run
 * with no steps (inputs wired straight to outputs) completes at once. If the enqueue fails
 * (Redis unreachable) the run stays stored as running and the reaper enqueues its steps later:
 * nothing acknowledged is lost.
 */
export class RunStarter {
  constructor(private readonly deps: RunStarterDeps) {}

  /**
   * Records a run that fails as it starts (a mounted workflow pinned to a version, or mounting
   * itself: the spec makes those run-time failures): stored with no steps, `run.started`, then
   * `run.failed` with `error`. Nothing runs and nothing is charged.
   */
  async startFailed(request: Omit<RunRequest, 'prepared'>, error: RunError): Promise<string> {
    const { id: runId, existing } = await this.store(request, []);
    // The request's idempotency key names a run already: that one is answered, nothing is started.
    if (existing) return runId;
    this.deps.onStored?.();
    annotateSpan({ [SPAN_ATTRIBUTES.runId]: runId });
    await this.announce(runId);
    await this.deps.lifecycle.fail(runId, error);
    return runId;
  }

  async start(request: RunRequest): Promise<string> {
    const { plan } = request.prepared;
    const first = this.reservationOfFirstStep(request);
    const { id: runId, existing } = await this.store(
      request,
      plan.order.map((nodeId) => ({
        nodeId,
        pendingDeps: plan.steps.get(nodeId)!.dependsOn.length,
        ...(first?.nodeId === nodeId ? { reservation: first.reservation } : {}),
      })),
    );
    // The request's idempotency key names a run already: that one is answered, nothing is started.
    if (existing) return runId;
    this.deps.onStored?.();
    annotateSpan({ [SPAN_ATTRIBUTES.runId]: runId });
    const context = createRunContext(runId, request.orgId, request.prepared, request.inputs, request.outputCache ?? 'auto', request.pinned?.definitions);
    this.deps.contexts.put(context);
    await this.announce(runId);
    if (plan.order.length === 0) {
      await this.deps.lifecycle.complete(context);
      return runId;
    }
    try {
      let enqueued: Promise<void>;
      if (first) enqueued = this.deps.queue.enqueue(runId, plan.initial, new Map([[first.nodeId, first.reservation.attemptToken]]));
      else {
        // Several first steps: local ones in groups (a fan-out from the run's inputs), as a commit shares out what it made ready.
        const jobs = planJobs(plan.initial, (id) => this.deps.nodes.mayRunInline(request.prepared.workflow.nodes.get(id)!.uses), false);
        enqueued = this.deps.queue.enqueue(runId, jobs.enqueue, undefined, jobs.groups);
      }
      // Its job ids are the steps', so an enqueue that lands after all is one the reaper's would have been.
      await settleWithin(enqueued, this.deps.redisWaitMs, () => new Error(`no answer from Redis within ${this.deps.redisWaitMs} ms`));
    } catch (err) {
      this.deps.log.error({ err, runId }, 'could not enqueue the first steps; the reaper will');
    }
    return runId;
  }

  /**
   * Appends `run.started`. If that fails (Redis unreachable), the caller is answered 503 and may
   * well send the request again, so the stored run is failed before anything of it runs: the
   * reaper would otherwise run it, and charge for it, beside the one sent again.
   */
  private async announce(runId: string): Promise<void> {
    try {
      await this.deps.failpoints?.hit('run.announce', runId);
      await this.withinRedisWait(this.deps.events.append(runId, { type: 'run.started', runId }), 'run.started');
    } catch (err) {
      const error = { code: 'unavailable', message: 'the run could not be started: its event log was unreachable; nothing of it ran' };
      // Failed in Postgres first; its events follow when Redis takes them (a late run.started
      // comes first: the client's queue keeps their order), which the record covers meanwhile.
      // Its idempotency key is given back: the request sent again with it starts a run, not this failed one.
      await this.deps.runs.forgetIdempotencyKey(runId).catch((failure: unknown) => this.deps.log.warn({ err: failure, runId }, 'the idempotency key of a run whose start was not announced was not given back'));
      await this.deps.lifecycle.failWithin(runId, error, 0).catch((failure: unknown) => this.deps.log.warn({ err: failure, runId }, 'a run whose start was not announced was failed, or failing it did not finish (the reaper may run it then)'));
      throw err;
    }
  }

  /** `pending`, or a 503 `unavailable` saying `what` Redis has not answered for `redisWaitMs`. */
  private withinRedisWait<T>(pending: Promise<T>, what: string): Promise<T> {
    const ms = this.deps.redisWaitMs;
    return settleWithin(pending, ms, () => outageError(`the run could not be started: the queue and event store (Redis) did not answer within ${ms} ms (${what}); nothing of it ran`));
  }

  /** The reservation of the run's first step (`localFirstStep`), when its worst case fits in the cap. */
  private reservationOfFirstStep(request: RunRequest): { nodeId: string; reservation: { estimateMicros: number; attemptToken: string } } | undefined {
    const first = localFirstStep(request.prepared, this.deps.nodes);
    const estimateMicros = first?.estimateFor(request.inputs);
    if (!first || estimateMicros === undefined || estimateMicros > request.capMicros) return undefined;
    return { nodeId: first.nodeId, reservation: { estimateMicros, attemptToken: randomUUID() } };
  }

  /** Stores the run, already running, with its steps (and the balance check when asked). */
  private store(request: Omit<RunRequest, 'prepared'>, steps: { nodeId: string; pendingDeps: number; reservation?: { estimateMicros: number; attemptToken: string } }[]): Promise<{ id: string; existing: boolean }> {
    return this.deps.runs.createRunOnce({
      ...(request.runId === undefined ? {} : { id: request.runId }),
      orgId: request.orgId,
      userId: request.userId,
      tokenId: request.tokenId,
      definition: request.definition,
      inputs: request.inputs,
      capMicros: request.capMicros,
      workflowId: request.workflowId ?? null,
      workflowVersionId: request.workflowVersionId ?? null,
      start: true,
      requireCredit: request.requireCredit ?? false,
      ...(request.maxDurationSeconds === undefined ? {} : { maxDurationSeconds: request.maxDurationSeconds }),
      ...(request.outputCache === undefined ? {} : { outputCache: request.outputCache }),
      ...(request.idempotency === undefined ? {} : { idempotency: request.idempotency }),
      ...(request.webhook === undefined ? {} : { webhook: request.webhook }),
      ...(request.pinned?.entries ? { nodeEntries: request.pinned.entries } : {}),
      ...(request.scheduleId === undefined ? {} : { scheduleId: request.scheduleId }),
      steps,
    });
  }
}
