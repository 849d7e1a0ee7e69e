import type { Logger } from '../../platform/logger';
import type { RunDeadlineStore } from '../ports';
import type { RunLifecycle } from '../run-lifecycle';
import { RepeatingSweep } from './repeating-sweep';
import { RUN_ERROR_CODES } from '../steps/step-errors';

export interface RunDeadlinesOptions {
  recovery: RunDeadlineStore;
  lifecycle: Pick<RunLifecycle, 'cancel'>;
  log: Logger;
  batchSize?: number;
  /** Told how many runs each sweep cancelled, or that one failed (metrics). */
  observer?: { cancelled(count: number): void; failed(): void };
}

/**
 * Cancels runs past their own deadline (`maxDurationSeconds`, docs/runs.md, Cancellation). Its
 * own timer, not the reaper's (every 30 s): a deadline is kept to about one sweep interval. Each
 * sweep is one index read of the unfinished runs with a deadline (a partial index: finished runs
 * leave it), so every worker process may sweep; two cancelling the same run cancel it once.
 */
export class RunDeadlines {
  private readonly repeating = new RepeatingSweep(() =>
    this.sweep().then(
      (cancelled) => {
        if (cancelled === 0) return;
        this.options.log.info({ cancelled }, 'runs past their deadline cancelled');
        this.options.observer?.cancelled(cancelled);
      },
      (err: unknown) => {
        this.options.log.warn({ err }, 'deadline sweep failed');
        this.options.observer?.failed();
      },
    ),
  );

  constructor(private readonly options: RunDeadlinesOptions) {}

  /** Cancels the runs past their deadline at `now`; answers how many this call cancelled. */
  async sweep(now: Date = new Date()): Promise<number> {
    const { recovery, lifecycle } = this.options;
    let cancelled = 0;
    for (const runId of await recovery.findPastDeadline({ now, limit: this.options.batchSize ?? 200 })) {
      const error = { code: RUN_ERROR_CODES.cancelled, message: 'the run was cancelled: it reached its deadline (maxDurationSeconds) before it finished' };
      if (await lifecycle.cancel(runId, error)) cancelled++;
    }
    return cancelled;
  }

  /** Sweeps every `intervalMs` (unref'd timer) until `stop`. */
  start(intervalMs: number): void {
    this.repeating.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }
}
