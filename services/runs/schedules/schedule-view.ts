import { SCHEDULE_NEXT_TICKS, SCHEDULE_RECENT_TICKS, type Schedule, type ScheduleTickBody } from '../../contract';
import { microsToUsd, monthStart, ticksAfter } from '../../engine';
import type { ScheduleRecord, ScheduleStore, ScheduleTickRecord } from '../ports';

/** One tick as the contract shows it. */
export function scheduleTickView(tick: ScheduleTickRecord): ScheduleTickBody {
  return {
    tickAt: tick.tickAt.toISOString(),
    status: tick.status,
    runId: tick.runId,
    runStatus: tick.runStatus,
    costUsd: tick.costMicros === null ? null : microsToUsd(tick.costMicros),
    skippedThrough: tick.skippedThrough?.toISOString() ?? null,
    skippedCount: tick.skippedCount,
    error: tick.error,
    recordedAt: tick.recordedAt.toISOString(),
  };
}

/**
 * Schedules as the contract shows them: their next ticks worked out, their latest ticks and their
 * month's spend read for all of them at once (two queries for a page, not two per schedule).
 */
export async function scheduleViews(records: readonly ScheduleRecord[], store: Pick<ScheduleStore, 'latestTicks' | 'spentSinceEach'>, now = new Date()): Promise<Schedule[]> {
  if (records.length === 0) return [];
  const [ticks, spent] = await Promise.all([
    store.latestTicks(
      records.map((record) => record.id),
      SCHEDULE_RECENT_TICKS,
    ),
    store.spentSinceEach(records.map((record) => ({ scheduleId: record.id, since: monthStart(now, record.timezone) }))),
  ]);
  return records.map((record) => viewOf(record, ticks.get(record.id) ?? [], spent.get(record.id) ?? 0));
}

function viewOf(record: ScheduleRecord, ticks: readonly ScheduleTickRecord[], spent: number): Schedule {
  // A tick due and not yet taken (a worker takes it within a sweep) is still a next tick.
  const next = record.status === 'active' && record.nextAt ? [record.nextAt, ...ticksAfter(record.cron, record.timezone, record.nextAt, SCHEDULE_NEXT_TICKS - 1)] : [];
  return {
    id: record.id,
    name: record.name,
    status: record.status === 'active' ? 'active' : 'paused',
    workflowRef: record.workflowRef,
    inputs: record.inputs,
    cron: record.cron,
    timezone: record.timezone,
    maxCostUsd: microsToUsd(record.capMicros),
    monthlyBudgetUsd: record.monthlyBudgetMicros === null ? null : microsToUsd(record.monthlyBudgetMicros),
    spentThisMonthUsd: microsToUsd(spent),
    catchUpSeconds: record.catchUpSeconds,
    maxDurationSeconds: record.maxDurationSeconds,
    outputCache: record.outputCache,
    pauseReason: record.pauseReason,
    nextTicks: next.map((at) => at.toISOString()),
    recentTicks: ticks.map(scheduleTickView),
    webhook: record.webhookUrl === null ? null : { url: record.webhookUrl, state: webhookState(record.webhookState), attempts: record.webhookAttempts },
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}

function webhookState(state: string | null): 'waiting' | 'pending' | 'delivered' | 'failed' {
  return state === 'pending' || state === 'delivered' || state === 'failed' ? state : 'waiting';
}
