import type { RouteInput, Schedule, ScheduleTickBody } from '../../contract';
import type { CallOptions } from './call';
import type { Client } from './client';

/** What `createSchedule` takes: `schedules.create`'s input (docs/schedules.md). */
export type ScheduleInput = RouteInput<'schedules.create'>;

/**
 * Creates a schedule: a published workflow run with fixed inputs at every tick of a cron
 * expression in a time zone (`POST /v1/schedules`). The service's workers start each tick's run;
 * its runs carry the schedule's id (`listRuns({ schedule })` on `GET /v1/runs`).
 *
 * ```ts
 * const nightly = await createSchedule(client, { workflowRef: 'acme/catalog@1', inputs: { shop: { value: 'eu' } }, cron: '0 2 * * *', timezone: 'Europe/Paris', maxCostUsd: 0.5 });
 * console.log(nightly.nextTicks);
 * ```
 */
export function createSchedule(client: Client, input: ScheduleInput, options: CallOptions = {}): Promise<Schedule> {
  return client.routes['schedules.create'](input, options);
}

/** A schedule with its next ticks, its latest ticks and their runs, and its spend this month. */
export function getSchedule(client: Client, id: string, options: CallOptions = {}): Promise<Schedule> {
  return client.routes['schedules.get']({ id }, options);
}

/** Every schedule of the organization (newest first), page after page; `status` keeps active or paused ones. */
export async function* listSchedules(client: Client, query: { status?: 'active' | 'paused' } = {}, options: CallOptions = {}): AsyncGenerator<Schedule> {
  let cursor: string | undefined;
  do {
    const page = await client.routes['schedules.list']({ ...query, limit: 100, ...(cursor === undefined ? {} : { cursor }) }, options);
    yield* page.schedules;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** Every tick of a schedule, newest first, page after page: each one's run, or why it failed or was skipped. */
export async function* scheduleTicks(client: Client, id: string, options: CallOptions = {}): AsyncGenerator<ScheduleTickBody> {
  let cursor: string | undefined;
  do {
    const page = await client.routes['schedules.ticks']({ id, limit: 200, ...(cursor === undefined ? {} : { cursor }) }, options);
    yield* page.ticks;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** Pauses a schedule (no tick starts a run until resumed); answers it. */
export function pauseSchedule(client: Client, id: string, options: CallOptions = {}): Promise<Schedule> {
  return client.routes['schedules.pause']({ id }, options);
}

/** Resumes a paused schedule from its next tick after now; answers it. */
export function resumeSchedule(client: Client, id: string, options: CallOptions = {}): Promise<Schedule> {
  return client.routes['schedules.resume']({ id }, options);
}

/** Deletes a schedule: it never ticks again; its runs keep its id. */
export async function deleteSchedule(client: Client, id: string, options: CallOptions = {}): Promise<void> {
  await client.routes['schedules.delete']({ id }, options);
}

/** A schedule's tick as its time zone reads it (`Mon 7 Dec, 09:00`): what people expect to see. */
export function tickLine(iso: string, timezone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: timezone, weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hour12: false }).format(new Date(iso));
}
