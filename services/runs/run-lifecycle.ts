import type { Outputs, RunError, RunEvent } from '../contract';
import { collectRunOutputs, outputSources } from '../engine';
import { isCallerError } from '../platform/app-error';
import { settleWithin } from '../platform/bounded-wait';
import type { Logger } from '../platform/logger';
import type { RunEndStore } from './ports';
import type { RunContext } from './run-context-cache';
import type { RunAbortPublisher, RunEventAppender } from './ports';

/**
 * The error `settleLostAttempts` hands svc_fail_run, which writes it only on an unfinished run:
 * that caller asks about stopped runs alone (a run never restarts), so no run ends with it.
 */
const LOST_AFTER_STOP: RunError = { code: 'step_attempts_exhausted', message: 'the run stopped while attempts of its steps were lost with their workers' };

export interface RunLifecycleDeps {
  runs: RunEndStore;
  events: RunEventAppender;
  publishAbort: RunAbortPublisher;
  log: Logger;
  /** Called once per run that reaches a terminal state here (metrics). */
  onTerminal: (outcome: 'completed' | 'failed', reason: string) => void;
  /** Whether a ref is one of the service's own blob URLs. */
  isOwnRef: (ref: string) => boolean;
  /**
   * Makes every output artifact the service's own: a foreign ref (a run input wired straight to
   * an output) is fetched safely and re-hosted under the run's prefix. Outputs point only at
   * our storage (SPEC: Artifact).
   */
  adoptOutputs: (runId: string, outputs: Record<string, unknown>) => Promise<Record<string, unknown>>;
}

/**
 * The two ends of a run, shared by the API (a run with no steps), the step executor and the
 * reaper. Each transition happens once in Postgres (a conditional update), and only the caller
 * that made it appends the terminal event, so a run has exactly one `run.completed` or
 * `run.failed`, and it is appended after the record is final: a client that reads the run after
 * the event sees the same outputs.
 */
export class RunLifecycle {
  /** Told of each run this process announced the end of (a batch's feeder gives the run's batch a turn). */
  private readonly endListeners: ((runId: string) => void)[] = [];

  constructor(private readonly deps: RunLifecycleDeps) {}

  /** Calls `listener` with each run whose end this process announces, after its terminal event. */
  onEnded(listener: (runId: string) => void): void {
    this.endListeners.push(listener);
  }

  private ended(runId: string): void {
    for (const listener of this.endListeners) listener(runId);
  }

  /**
   * Completes a run whose steps are all completed: collects the outputs (from `known`, the
   * outputs the caller has in hand, and Postgres for the rest), stores them, emits
   * `run.completed`. False when the run was not running (someone else finished it).
   */
  async complete(context: RunContext, known: ReadonlyMap<string, Record<string, unknown>> = new Map()): Promise<boolean> {
    const { runId } = context;
    const missing = outputSources(context.prepared.workflow).filter((id) => !known.has(id));
    const loaded = await this.deps.runs.stepInputs(runId, missing);
    const stepOutputs = new Map([...known, ...loaded]);
    let outputs;
    try {
      outputs = collectRunOutputs({ workflow: context.prepared.workflow, inputs: context.inputs, stepOutputs });
    } catch (err) {
      this.deps.log.error({ err, runId }, 'outputs of a finished run could not be collected');
      return this.fail(runId, { code: 'internal', message: 'the run finished but its outputs could not be collected; the failure was logged' });
    }
    if (this.hasForeignRefs(outputs)) {
      try {
        outputs = (await this.deps.adoptOutputs(runId, outputs)) as typeof outputs;
      } catch (err) {
        if (!isCallerError(err)) this.deps.log.error({ err, runId }, 'outputs of a finished run could not be stored');
        return this.fail(runId, isCallerError(err) ? { code: err.code, message: `an output could not be stored: ${err.message}` } : { code: 'internal', message: 'an output could not be stored; the failure was logged' });
      }
    }
    if (!(await this.deps.runs.completeRun(runId, outputs))) return false;
    await this.announceCompletion(runId, outputs);
    return true;
  }

  /** Whether `ref` is one of the service's own signed blob URLs. */
  isOwnRef(ref: string): boolean {
    return this.deps.isOwnRef(ref);
  }

  /** Whether some output artifact points somewhere else than the service's own storage. */
  hasForeignRefs(outputs: Record<string, unknown>): boolean {
    const isOwn = this.deps.isOwnRef;
    return Object.values(outputs).some((artifact) => {
      const ref = (artifact as { ref?: unknown } | null)?.ref;
      return typeof ref === 'string' && !isOwn(ref);
    });
  }

  /**
   * The event of a run that has just been completed in Postgres (here, or with its last step's
   * commit), after `preceding` (that step's own `step.completed`) in the same round trip.
   */
  async announceCompletion(runId: string, outputs: Record<string, unknown>, preceding: readonly RunEvent[] = []): Promise<void> {
    await this.deps.events.appendAll(runId, [...preceding, { type: 'run.completed', outputs: outputs as Outputs }]);
    this.deps.onTerminal('completed', 'completed');
    this.ended(runId);
  }

  /**
   * Fails a run for `error`: status failed, unfinished steps stopped and their reservations
   * released; then (only if this call failed it) `step.failed` for `nodeId` when given,
   * `run.failed`, and an abort to every worker running one of its steps.
   */
  async fail(runId: string, error: RunError, nodeId?: string): Promise<boolean> {
    const result = await this.deps.runs.failRun(runId, error, nodeId === undefined ? {} : { nodeId });
    if (!result.failed) return false;
    await this.announceFailure(runId, error, nodeId);
    return true;
  }

  /**
   * Fails a run as `fail` does, but waits for its announcement (events, aborts) at most
   * `announceWithinMs`: then it answers, the announcement following when Redis takes it (the
   * record has the failure meanwhile). For a caller that must answer in a bounded time while
   * Redis may be away: a start not announced (0), a cancel (REQUEST_REDIS_WAIT_MS).
   */
  async failWithin(runId: string, error: RunError, announceWithinMs: number, options: { cancelled?: boolean } = {}): Promise<boolean> {
    const result = await this.deps.runs.failRun(runId, error, options.cancelled ? { cancelled: true } : {});
    if (!result.failed) return false;
    const announced = this.announceFailure(runId, error);
    announced.catch((err: unknown) => this.deps.log.warn({ err, runId }, 'the end of a run was not announced; its record has it'));
    await settleWithin(announced, announceWithinMs, () => new Error('not announced in time')).catch(() => {
      this.deps.log.warn({ runId, waitedMs: announceWithinMs }, 'the end of a run is announced when Redis answers; its record has it meanwhile');
    });
    return true;
  }

  /**
   * Settles the attempts still open in a run that has already stopped, lost with their workers
   * (docs/runs.md, Crashes and lost work): each is charged its lost charge, as a taken-over
   * attempt is, and becomes `cancelled`; the reservations are released and the run's hold on its
   * organization falls to what it was charged. The run's status, error and events stay as they
   * are (the fail is a no-op on a stopped run but for its steps). Answers how many attempts were
   * settled. The caller has made sure no job may still run them.
   */
  async settleLostAttempts(runId: string): Promise<number> {
    const result = await this.deps.runs.failRun(runId, LOST_AFTER_STOP);
    return result.cancelled.length;
  }

  /**
   * Cancels a run (its owner asked, or its deadline passed): status `cancelled`, unfinished steps
   * stopped and their reservations released, an attempt that may have called out charged what it
   * held; then `run.failed` with `error` (code `cancelled`) and an abort to every worker running
   * one of its steps, which cancels the provider's job where the provider has a cancel endpoint.
   * False when the run had already ended (completed, failed or cancelled before).
   */
  async cancel(runId: string, error: RunError): Promise<boolean> {
    const result = await this.deps.runs.failRun(runId, error, { cancelled: true });
    if (!result.failed) return false;
    await this.announceFailure(runId, error);
    return true;
  }

  /** Events and aborts of a run that has just been failed in Postgres (by `fail` or a step's own failure). */
  async announceFailure(runId: string, error: RunError, nodeId?: string): Promise<void> {
    const stepFailed: RunEvent[] = nodeId === undefined ? [] : [{ type: 'step.failed', nodeId, error }];
    await this.deps.events.appendAll(runId, [...stepFailed, { type: 'run.failed', error }]);
    this.deps.onTerminal('failed', error.code);
    this.ended(runId);
    await this.deps.publishAbort(runId).catch((err: unknown) => this.deps.log.warn({ err, runId }, 'could not publish the run abort'));
  }
}
