import { randomUUID } from 'node:crypto';
import type { ArtifactInput, OutputCacheMode } from '../../contract';
import { microsToUsd, monthStart, tickAfter, tickBefore, ticksBetween } from '../../engine';
import { AppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { PauseReason, ScheduleRecord, ScheduleTickStore } from '../ports';
import type { RunLauncher } from '../start/run-launcher';
import { RepeatingSweep } from '../sweeps/repeating-sweep';

export interface ScheduleTickerDeps {
  schedules: ScheduleTickStore;
  runs: Pick<RunLauncher, 'startUnfollowed'>;
  log: Logger;
  /** How often due schedules are looked for (SCHEDULE_SWEEP_MS): a tick starts at most this late. */
  intervalMs: number;
  /** How long a worker holds a due schedule; a worker that dies holding one gives it up this late. */
  leaseMs?: number;
  /** Schedules handled per sweep at most. */
  sweepLimit?: number;
  observer?: { tick(outcome: 'started' | 'failed' | 'skipped'): void; paused(code: string): void };
  now?: () => Date;
}

/** Missed ticks counted one by one up to this many; more are recorded as "or more". */
const MISSED_COUNT_LIMIT = 10_000;
const TICK_REQUEST_HASH = 'schedule-tick';
/** How soon a worker tries again a tick that failed (its storage or its enqueue refused). */
const FAILED_TICK_RETRY_MS = 2_000;

type TickOutcome = { outcome: 'started'; runId: string } | { outcome: 'paused' } | { outcome: 'retry' };

/**
 * Starts schedules' runs (docs/schedules.md, How ticks run), on every worker: every `intervalMs`
 * it leases the schedules whose next tick is due (`SKIP LOCKED`: each to one worker), and for each:
 * finishes a tick a dead worker began (its run id was recorded before its run was stored, so the
 * same run is stored, or found), records the missed ticks as skipped, runs the latest due tick
 * when it is within the catch-up window and the month's budget, and moves the schedule to its
 * next tick. A refusal of the run (workflow gone, no credit, inputs the workflow no longer takes)
 * pauses the schedule with the reason; a failure of our own (Postgres, Redis) leaves the lease to
 * lapse and the tick to be tried again.
 */
export class ScheduleTicker {
  private readonly repeating = new RepeatingSweep(() => this.sweep(this.now()).catch((err: unknown) => this.deps.log.warn({ err }, 'schedule sweep failed')));
  private readonly now: () => Date;

  constructor(private readonly deps: ScheduleTickerDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  start(): void {
    this.repeating.start(this.deps.intervalMs);
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  /** One look for the schedules due at `now`; how many it handled. */
  async sweep(now = this.now()): Promise<number> {
    const due = await this.deps.schedules.claimDue(now, this.deps.sweepLimit ?? 50, this.deps.leaseMs ?? 60_000);
    await Promise.all(
      due.map((schedule) =>
        this.handle(schedule, now).catch(async (err: unknown) => {
          this.deps.log.warn({ err, scheduleId: schedule.id }, 'a schedule tick did not finish; a worker tries again shortly');
          // Not the whole lease: a tick that failed on Redis or Postgres restarting is tried again once they are back.
          await this.deps.schedules.retryAt(schedule.id, schedule.leaseToken!, new Date(this.now().getTime() + FAILED_TICK_RETRY_MS)).catch(() => undefined);
        }),
      ),
    );
    return due.length;
  }

  private async handle(schedule: ScheduleRecord, now: Date): Promise<void> {
    const { schedules } = this.deps;
    const { cron, timezone } = schedule;
    let from = schedule.nextAt!;
    let lastTickAt: Date | null = null;
    let lastRunId: string | null = null;
    // A tick begun by a worker that stopped: its run may be stored already. Finished first, whatever its age.
    if (schedule.startingTick) {
      const { tickAt, runId } = schedule.startingTick;
      const ended = await this.startTick(schedule, tickAt, runId, now);
      if (ended.outcome !== 'started') return;
      lastTickAt = tickAt;
      lastRunId = ended.runId;
      from = tickAfter(cron, timezone, tickAt) ?? from;
    }
    // Paused since: its half-begun tick finished, it runs no other (advance leaves next_at null).
    if (schedule.status !== 'active') {
      await schedules.advance(schedule.id, schedule.leaseToken!, { nextAt: null, lastTickAt: lastTickAt ?? schedule.lastTickAt ?? now, lastRunId });
      return;
    }
    const due = from.getTime() <= now.getTime() ? ticksBetween(cron, timezone, from, now, MISSED_COUNT_LIMIT) : { first: null, last: null, count: 0, more: false };
    if (due.last && due.first) {
      const latest = due.last;
      const runIt = now.getTime() - latest.getTime() <= schedule.catchUpSeconds * 1000;
      const skipped = runIt ? due.count - 1 : due.count;
      if (skipped > 0) {
        const through = runIt ? tickBefore(cron, timezone, latest)! : latest;
        const more = due.more ? ' or more' : '';
        await schedules.recordSkipped(schedule.id, due.first, through, skipped, {
          code: 'missed',
          message: runIt
            ? `${skipped}${more} tick${skipped === 1 ? '' : 's'} passed while no worker ran; only the latest (${latest.toISOString()}) was run, late`
            : `${skipped}${more} tick${skipped === 1 ? '' : 's'} passed while no worker ran, the latest more than catchUpSeconds (${schedule.catchUpSeconds} s) ago`,
        });
        this.deps.observer?.tick('skipped');
      }
      lastTickAt = latest;
      if (runIt) {
        const refusal = await this.overBudget(schedule, latest);
        if (refusal) {
          await schedules.recordSkipped(schedule.id, latest, latest, 1, refusal);
          this.deps.observer?.tick('skipped');
        } else {
          const opened = await schedules.openTick(schedule.id, latest, randomUUID());
          if (opened.status === 'starting') {
            const ended = await this.startTick(schedule, latest, opened.runId, now);
            if (ended.outcome !== 'started') return;
            lastRunId = ended.runId;
          }
        }
      }
    }
    const nextAt = tickAfter(cron, timezone, now);
    if (!(await schedules.advance(schedule.id, schedule.leaseToken!, { nextAt, lastTickAt: lastTickAt ?? schedule.lastTickAt ?? now, lastRunId }))) {
      this.deps.log.warn({ scheduleId: schedule.id }, 'a schedule\'s lease lapsed before its tick was recorded; the worker that took it over records it');
    }
  }

  /** The run of a tick, stored once under the id recorded with the tick (found when it was stored already). */
  private async startTick(schedule: ScheduleRecord, tickAt: Date, runId: string, now: Date): Promise<TickOutcome> {
    const { schedules, runs, log } = this.deps;
    try {
      if (!(await schedules.runExists(runId))) {
        await runs.startUnfollowed(
          { workflowRef: schedule.workflowRef, inputs: schedule.inputs as Record<string, ArtifactInput>, capMicros: schedule.capMicros },
          {
            orgId: schedule.orgId,
            userId: schedule.userId,
            tokenId: null,
            log,
            scheduleId: schedule.id,
            // The tick names the run too: a second store of it answers the first.
            idempotency: { key: `schedule:${schedule.id}:${tickAt.toISOString()}`, requestHash: TICK_REQUEST_HASH },
            ...(schedule.maxDurationSeconds === null ? {} : { maxDurationSeconds: schedule.maxDurationSeconds }),
            ...(schedule.outputCache === null ? {} : { outputCache: schedule.outputCache as OutputCacheMode }),
          },
          runId,
        );
      }
      await schedules.closeTick(schedule.id, tickAt, { status: 'started' });
      this.deps.observer?.tick('started');
      log.info({ scheduleId: schedule.id, tickAt, runId }, 'schedule tick started its run');
      return { outcome: 'started', runId };
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) {
        log.warn({ err, scheduleId: schedule.id, tickAt }, 'a schedule tick could not start its run; tried again when its lease lapses');
        return { outcome: 'retry' };
      }
      const error = { code: err.code, message: err.message };
      await schedules.closeTick(schedule.id, tickAt, { status: 'failed', error });
      this.deps.observer?.tick('failed');
      const reason = pauseReasonOf(err, now);
      if (await schedules.pauseItself(schedule.id, schedule.leaseToken!, reason)) {
        this.deps.observer?.paused(reason.code);
        log.warn({ scheduleId: schedule.id, reason }, 'schedule paused itself');
      }
      return { outcome: 'paused' };
    }
  }

  /** Why the tick's run would take the schedule over its monthly budget; null when it fits (or there is none). */
  private async overBudget(schedule: ScheduleRecord, tickAt: Date): Promise<{ code: string; message: string } | null> {
    const budget = schedule.monthlyBudgetMicros;
    if (budget === null) return null;
    const spent = await this.deps.schedules.spentSince(schedule.id, monthStart(tickAt, schedule.timezone));
    if (spent + schedule.capMicros <= budget) return null;
    return {
      code: 'monthly_budget',
      message: `its runs this month have spent or hold $${microsToUsd(spent)} of its monthly budget of $${microsToUsd(budget)}; a run may spend up to $${microsToUsd(schedule.capMicros)}, so this tick was skipped (ticks run again next month, or raise the budget)`,
    };
  }
}

function pauseReasonOf(err: AppError, now: Date): PauseReason {
  const at = now.toISOString();
  if (err.code === 'not_found') return { code: 'workflow_not_found', message: `its workflow no longer resolves: ${err.message}; publish it again, or delete this schedule`, by: 'service', at };
  if (err.code === 'insufficient_credit') return { code: 'insufficient_credit', message: `${err.message}; resume the schedule once credit is added`, by: 'service', at };
  return { code: err.code, message: `its run was refused: ${err.message}; fix the workflow or create a new schedule, then resume`, by: 'service', at };
}
