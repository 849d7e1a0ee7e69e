import { isAppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { RunRecoveryStore } from '../ports';
import type { RunContextCache } from '../run-context-cache';
import type { RunLifecycle } from '../run-lifecycle';
import { RepeatingSweep } from './repeating-sweep';

/** Re-enqueues steps whose jobs are gone (the step queue's `requeue`), and tells which steps no job may still run. */
export interface StepRequeuer {
  requeue(runId: string, nodeIds: readonly string[]): Promise<string[]>;
  withoutLiveJob(runId: string, nodeIds: readonly string[]): Promise<string[]>;
}

export interface RunReaperOptions {
  recovery: RunRecoveryStore;
  contexts: RunContextCache;
  lifecycle: RunLifecycle;
  queue: StepRequeuer;
  log: Logger;
  /** A step `running` for longer than this with no live job is enqueued again. */
  stepStuckMs: number;
  /** A run unfinished this long after it started fails with `run_timeout`. */
  runTimeoutMs: number;
  /** How long after its last step a run may stay uncompleted before the reaper completes it. */
  finishGraceMs?: number;
  batchSize?: number;
  /** Told what each sweep did, or that one failed (metrics). */
  observer?: { swept(report: ReaperReport): void; failed(): void };
}

/** What one sweep did. */
export interface ReaperReport {
  timedOut: number;
  completed: number;
  requeued: number;
  failed: number;
  /** Attempts lost with their workers in runs that had stopped, settled (charged their lost charge, reservations released). */
  settled: number;
  /** Idempotency keys past their 24 hours, deleted. */
  keysExpired: number;
}

/**
 * The stuck-run reaper. Postgres is the source of truth; the queue and the event log may lose
 * things (Redis restarted empty, a worker killed between two writes). Each sweep:
 * 1. fails runs past the run timeout (`run_timeout`), so every run ends;
 * 2. completes runs whose steps all completed but whose completion was never written;
 * 3. re-enqueues ready steps that have no live job (lost jobs, jobs our infrastructure failed);
 * 4. re-enqueues steps stuck `running` past `stepStuckMs` without a live job (their worker died
 *    and the job is gone); the executor's `reserve` takes the step over and releases the dead
 *    attempt's reservation;
 * 5. settles attempts left `running` in runs that stopped meanwhile (a sibling failed the run
 *    while their workers were dead; their redeliveries found the run stopped), once every such
 *    attempt of the run started before `stepStuckMs` ago and no job may still run it: each is
 *    charged its lost charge, as a taken-over attempt is, and its reservation is released;
 * 6. deletes idempotency keys past their 24 hours.
 * Any number of reapers may run (one per worker process): every action is idempotent.
 */
export class RunReaper {
  private readonly repeating = new RepeatingSweep(() =>
    this.sweep().then(
      (report) => {
        if (report.timedOut + report.completed + report.requeued + report.failed + report.settled + report.keysExpired > 0) this.options.log.info({ report }, 'reaper sweep');
      },
      (err: unknown) => {
        this.options.log.error({ err }, 'reaper sweep failed');
        this.options.observer?.failed();
      },
    ),
  );

  constructor(private readonly options: RunReaperOptions) {}

  async sweep(now: Date = new Date()): Promise<ReaperReport> {
    const { recovery, lifecycle, queue, log } = this.options;
    const limit = this.options.batchSize ?? 200;
    const report: ReaperReport = { timedOut: 0, completed: 0, requeued: 0, failed: 0, settled: 0, keysExpired: 0 };

    for (const runId of await recovery.findTimedOut({ startedBefore: new Date(now.getTime() - this.options.runTimeoutMs), limit })) {
      const message = `the run did not finish within ${Math.round(this.options.runTimeoutMs / 1000)} s`;
      if (await lifecycle.fail(runId, { code: 'run_timeout', message })) report.timedOut++;
    }

    for (const runId of await recovery.findFinishable({ graceMs: this.options.finishGraceMs ?? 5000, limit })) {
      const context = await this.contextOf(runId, report);
      if (context && (await lifecycle.complete(context))) report.completed++;
    }

    const byRun = new Map<string, string[]>();
    const stuck = await recovery.findStuck({ startedBefore: new Date(now.getTime() - this.options.stepStuckMs), limit });
    for (const step of [...(await recovery.listRunnable({ limit })), ...stuck]) {
      byRun.set(step.runId, [...(byRun.get(step.runId) ?? []), step.nodeId]);
    }
    for (const [runId, nodeIds] of byRun) {
      const requeued = await queue.requeue(runId, nodeIds);
      if (requeued.length > 0) log.warn({ runId, nodeIds: requeued }, 'reaper re-enqueued steps without a live job');
      report.requeued += requeued.length;
    }
    report.settled = await this.settleLostInStopped(now, limit);
    report.keysExpired = await recovery.deleteExpiredIdempotencyKeys({ limit: 1000 });
    this.options.observer?.swept(report);
    return report;
  }

  /** Sweeps every `intervalMs` (unref'd timer) until `stop`. */
  start(intervalMs: number): void {
    this.repeating.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  /** Step 5 of a sweep: how many lost attempts of stopped runs it settled. */
  private async settleLostInStopped(now: Date, limit: number): Promise<number> {
    const { recovery, lifecycle, queue, log } = this.options;
    const stuckBefore = now.getTime() - this.options.stepStuckMs;
    let settled = 0;
    for (const run of await recovery.findOpenInStopped({ limit })) {
      // An attempt of a live worker settles itself (its run's abort reaches it): wait while any may be one.
      if (run.steps.some((step) => step.startedAt.getTime() >= stuckBefore)) continue;
      const nodeIds = run.steps.map((step) => step.nodeId);
      if ((await queue.withoutLiveJob(run.runId, nodeIds)).length < nodeIds.length) continue;
      const n = await lifecycle.settleLostAttempts(run.runId);
      if (n > 0) log.warn({ runId: run.runId, nodeIds }, 'reaper settled attempts lost after their run stopped');
      settled += n;
    }
    return settled;
  }

  /** A run's context; a run whose definition no longer prepares cannot continue and fails. */
  private async contextOf(runId: string, report: ReaperReport) {
    try {
      return await this.options.contexts.get(runId);
    } catch (err) {
      if (!isAppError(err, 'run_unpreparable')) throw err;
      if (await this.options.lifecycle.fail(runId, { code: 'run_unrecoverable', message: err.message })) report.failed++;
      return null;
    }
  }
}
