import type { Schedule, ScheduleList } from '../../contract';
import { AppError } from '../../platform/app-error';
import { scheduleTickView, scheduleViews, type ScheduleLauncher } from '../../runs';
import type { ScheduleRepository } from '../../store';
import { authOf, backgroundOptions, type Handler } from './handler-types';
import { decodeRunCursor, encodeRunCursor } from './run-cursor';

export interface ScheduleHandlerDeps {
  launcher: Pick<ScheduleLauncher, 'create' | 'resume'>;
  schedules: Pick<ScheduleRepository, 'get' | 'list' | 'ticks' | 'latestTicks' | 'spentSinceEach' | 'pause' | 'delete'>;
  /** What is wrong with a Webhook-Url by the address rules; null when nothing. */
  webhookUrlProblem(url: string): string | null;
}

type ScheduleName = 'schedules.create' | 'schedules.list' | 'schedules.get' | 'schedules.ticks' | 'schedules.pause' | 'schedules.resume' | 'schedules.delete';

const TICK_CURSOR = /^t(\d{1,15})$/;

function noSuchSchedule(id: string): AppError {
  return new AppError({ code: 'not_found', message: `no schedule "${id.slice(0, 100)}" in your organization; list yours with GET /v1/schedules` });
}

/** The schedule routes (docs/schedules.md): create (checked, stored, ticked by the workers), read, pause, resume, delete. */
export function scheduleHandlers(deps: ScheduleHandlerDeps): { [K in ScheduleName]: Handler<K> } {
  const find = async (id: string, orgId: string) => {
    const record = await deps.schedules.get(id, orgId);
    if (!record) throw noSuchSchedule(id);
    return record;
  };
  const view = async (id: string, orgId: string): Promise<Schedule> => (await scheduleViews([await find(id, orgId)], deps.schedules))[0]!;
  return {
    'schedules.create': async (input, ctx) => {
      const auth = authOf(ctx);
      const { id } = await deps.launcher.create(input, { orgId: auth.orgId, userId: auth.userId, log: ctx.log, ...backgroundOptions(ctx, 'schedules.create', input, deps.webhookUrlProblem) });
      return view(id, auth.orgId);
    },

    'schedules.list': async (query, ctx): Promise<ScheduleList> => {
      const auth = authOf(ctx);
      const after = query.cursor === undefined ? undefined : decodeRunCursor(query.cursor);
      if (after === null) throw new AppError({ code: 'validation_failed', message: 'cursor is not a cursor of this listing; pass the "nextCursor" of the previous page unchanged, or leave it out for the first page' });
      const limit = query.limit ?? 20;
      const records = await deps.schedules.list(auth.orgId, { limit: limit + 1, ...(after ? { after } : {}), ...(query.status ? { status: query.status } : {}) });
      const page = records.slice(0, limit);
      const last = page.at(-1);
      return {
        schedules: await scheduleViews(page, deps.schedules),
        nextCursor: records.length > limit && last ? encodeRunCursor({ createdAt: last.createdAt, id: last.id }) : null,
      };
    },

    'schedules.get': async ({ id }, ctx) => view(id, authOf(ctx).orgId),

    'schedules.ticks': async ({ id, limit = 50, cursor }, ctx) => {
      const record = await find(id, authOf(ctx).orgId);
      const match = cursor === undefined ? null : TICK_CURSOR.exec(cursor);
      if (cursor !== undefined && !match) throw new AppError({ code: 'validation_failed', message: 'cursor is not a cursor of this listing; pass the "nextCursor" of the previous page unchanged' });
      const ticks = await deps.schedules.ticks(record.id, { limit: limit + 1, ...(match ? { before: new Date(Number(match[1])) } : {}) });
      const page = ticks.slice(0, limit);
      return { ticks: page.map(scheduleTickView), nextCursor: ticks.length > limit ? `t${page.at(-1)!.tickAt.getTime()}` : null };
    },

    'schedules.pause': async ({ id }, ctx) => {
      const auth = authOf(ctx);
      const record = await find(id, auth.orgId);
      if (record.status === 'active') {
        await deps.schedules.pause(record.id, auth.orgId, { code: 'paused', message: 'paused by a caller (POST /v1/schedules/:id/pause); resume it to start runs again', by: 'caller', at: new Date().toISOString() });
        ctx.log.info({ scheduleId: record.id }, 'schedule paused');
      }
      return view(record.id, auth.orgId);
    },

    'schedules.resume': async ({ id }, ctx) => {
      const auth = authOf(ctx);
      const record = await find(id, auth.orgId);
      if (record.status === 'paused') {
        await deps.launcher.resume(record.id, auth.orgId, record);
        ctx.log.info({ scheduleId: record.id }, 'schedule resumed');
      }
      return view(record.id, auth.orgId);
    },

    'schedules.delete': async ({ id }, ctx) => {
      const auth = authOf(ctx);
      if (!(await deps.schedules.delete(id, auth.orgId))) throw noSuchSchedule(id);
      ctx.log.info({ scheduleId: id }, 'schedule deleted');
      return null;
    },
  };
}
