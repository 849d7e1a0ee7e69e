import { SCHEDULE_DEFAULT_CATCH_UP_SECONDS, type ArtifactInput, type OutputCacheMode } from '../../contract';
import { checkCron, effectiveCapMicros, tickAfter, usdToMicrosFloor } from '../../engine';
import { AppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { ScheduleStore } from '../ports';
import type { RunLauncher } from '../start/run-launcher';

/** What `schedules.create` asks (the contract's input). */
export interface ScheduleRequest {
  name?: string;
  workflowRef: string;
  inputs?: Record<string, ArtifactInput>;
  cron: string;
  timezone?: string;
  maxCostUsd?: number;
  monthlyBudgetUsd?: number;
  catchUpSeconds?: number;
}

/** Who creates a schedule, with the call's options (each tick's run takes them). */
export interface ScheduleCaller {
  orgId: string;
  userId: string;
  log: Logger;
  maxDurationSeconds?: number;
  outputCache?: OutputCacheMode;
  idempotency?: { key: string; requestHash: string };
  /** Where its pauses by the service are POSTed. */
  webhookUrl?: string;
}

export interface ScheduleLauncherDeps {
  runs: Pick<RunLauncher, 'checkRun'>;
  schedules: Pick<ScheduleStore, 'create' | 'resume'>;
  /** Ticks closer together than this are refused (SCHEDULE_MIN_INTERVAL_SECONDS). */
  minIntervalSeconds: number;
  now?: () => Date;
}

/**
 * Takes a schedule in (docs/schedules.md): the cron expression and time zone checked, the
 * workflow resolved and the inputs checked as `runs.create` checks a run's, then stored with its
 * first tick. Nothing runs here: the workers' tickers start each tick's run (`ScheduleTicker`).
 */
export class ScheduleLauncher {
  private readonly now: () => Date;

  constructor(private readonly deps: ScheduleLauncherDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  async create(request: ScheduleRequest, caller: ScheduleCaller): Promise<{ id: string; existing: boolean }> {
    const timezone = request.timezone ?? 'UTC';
    const cron = request.cron.trim();
    const checked = checkCron(cron, timezone, this.deps.minIntervalSeconds);
    // The message names the field already (`cron "…" has 4 fields`, `timezone "…" is not …`).
    if (!checked.ok) throw new AppError({ code: 'validation_failed', message: checked.message, details: { field: checked.field } });
    const first = tickAfter(cron, timezone, this.now());
    if (!first) throw new AppError({ code: 'validation_failed', message: `cron: "${cron}" has no tick after now`, details: { field: 'cron' } });
    const inputs = request.inputs ?? {};
    await this.deps.runs.checkRun({ workflowRef: request.workflowRef, inputs }, caller.orgId);
    const capMicros = effectiveCapMicros(request.maxCostUsd);
    const budget = request.monthlyBudgetUsd === undefined ? null : usdToMicrosFloor(request.monthlyBudgetUsd);
    if (budget !== null && budget < capMicros) {
      throw new AppError({
        code: 'validation_failed',
        message: `monthlyBudgetUsd (${request.monthlyBudgetUsd}) is below one run's cap (maxCostUsd): no tick could start a run; raise the budget or lower maxCostUsd`,
        details: { field: 'monthlyBudgetUsd' },
      });
    }
    const created = await this.deps.schedules.create({
      orgId: caller.orgId,
      userId: caller.userId,
      name: request.name ?? null,
      workflowRef: request.workflowRef,
      inputs,
      cron,
      timezone,
      capMicros,
      monthlyBudgetMicros: budget,
      catchUpSeconds: request.catchUpSeconds ?? SCHEDULE_DEFAULT_CATCH_UP_SECONDS,
      outputCache: caller.outputCache ?? null,
      maxDurationSeconds: caller.maxDurationSeconds ?? null,
      webhookUrl: caller.webhookUrl ?? null,
      nextAt: first,
      idempotency: caller.idempotency ?? null,
    });
    if (created.existing) {
      if (!created.sameRequest) {
        throw new AppError({ code: 'idempotency_key_reused', message: 'this Idempotency-Key was used in the last 24 hours with a different schedule request; send that request again, or use a new key' });
      }
      return created;
    }
    caller.log.info({ scheduleId: created.id, cron, timezone, firstTick: first }, 'schedule stored');
    return created;
  }

  /** Resumes a paused schedule from its next tick after now; false when there is no such schedule. */
  async resume(id: string, orgId: string, record: { cron: string; timezone: string }): Promise<boolean> {
    const next = tickAfter(record.cron, record.timezone, this.now());
    if (!next) throw new AppError({ code: 'conflict', message: `cron "${record.cron}" has no tick after now; delete this schedule` });
    return this.deps.schedules.resume(id, orgId, next);
  }
}
