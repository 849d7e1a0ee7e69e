import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { ScheduleCreateSchema, ScheduleIdSchema, ScheduleListSchema, ScheduleSchema, ScheduleStatusSchema, ScheduleTickPageSchema } from '../schemas/schedule';
import { strictObject } from '../schemas/strict-object';

const errorsOfReads = ['validation_failed', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited'] as const;

/**
 * `POST /v1/schedules`: a published workflow run with fixed inputs on a cron expression in a time
 * zone (docs/schedules.md). The workflow and the inputs are checked now; answers the schedule.
 */
export const schedulesCreate = defineOperation({
  name: 'schedules.create',
  summary: 'Create a schedule: a published workflow run with fixed inputs at every tick of a cron expression',
  http: { method: 'POST', path: '/v1/schedules', pathParams: [], status: 201, options: ['maxDurationSeconds', 'idempotencyKey', 'webhookUrl', 'outputCache'] },
  mcpTool: 'schedules_create',
  scope: 'run',
  auth: 'required',
  input: ScheduleCreateSchema,
  output: ScheduleSchema,
  response: 'json',
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited', 'idempotency_key_reused'],
  spendsMoney: false,
  readOnly: false,
});

/** `GET /v1/schedules`: the organization's schedules, newest first. */
export const schedulesList = defineOperation({
  name: 'schedules.list',
  summary: "List your organization's schedules, newest first",
  http: { method: 'GET', path: '/v1/schedules', pathParams: [] },
  mcpTool: 'schedules_list',
  scope: 'run',
  auth: 'required',
  input: strictObject({
    status: Type.Optional(ScheduleStatusSchema),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size, default 20' })),
    cursor: Type.Optional(Type.String({ minLength: 1, description: "The previous page's nextCursor" })),
  }),
  output: ScheduleListSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/** `GET /v1/schedules/:id`: a schedule with its next ticks and its latest. */
export const schedulesGet = defineOperation({
  name: 'schedules.get',
  summary: 'Get a schedule: its next ticks, its latest ticks and their runs, its spend this month',
  http: { method: 'GET', path: '/v1/schedules/:id', pathParams: ['id'] },
  mcpTool: 'schedules_get',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: ScheduleIdSchema }),
  output: ScheduleSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: true,
});

/** `GET /v1/schedules/:id/ticks`: every tick of a schedule, newest first. */
export const schedulesTicks = defineOperation({
  name: 'schedules.ticks',
  summary: "List a schedule's ticks, newest first: each one's run, or why it failed or was skipped",
  http: { method: 'GET', path: '/v1/schedules/:id/ticks', pathParams: ['id'] },
  mcpTool: 'schedules_ticks',
  scope: 'run',
  auth: 'required',
  input: strictObject({
    id: ScheduleIdSchema,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'Page size, default 50' })),
    cursor: Type.Optional(Type.String({ minLength: 1, description: "The previous page's nextCursor" })),
  }),
  output: ScheduleTickPageSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: true,
});

/** `POST /v1/schedules/:id/pause`: no tick starts a run until it is resumed. */
export const schedulesPause = defineOperation({
  name: 'schedules.pause',
  summary: 'Pause a schedule: no tick starts a run until it is resumed (runs in flight go on)',
  http: { method: 'POST', path: '/v1/schedules/:id/pause', pathParams: ['id'], body: 'empty' },
  mcpTool: 'schedules_pause',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: ScheduleIdSchema }),
  output: ScheduleSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: false,
});

/** `POST /v1/schedules/:id/resume`: ticks from now on start runs again (the paused ones are not run late). */
export const schedulesResume = defineOperation({
  name: 'schedules.resume',
  summary: 'Resume a paused schedule: its next tick from now on starts a run (ticks while paused are not run)',
  http: { method: 'POST', path: '/v1/schedules/:id/resume', pathParams: ['id'], body: 'empty' },
  mcpTool: 'schedules_resume',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: ScheduleIdSchema }),
  output: ScheduleSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: false,
});

/** `DELETE /v1/schedules/:id`: it never ticks again; the runs it started keep its id. */
export const schedulesDelete = defineOperation({
  name: 'schedules.delete',
  summary: 'Delete a schedule: it never ticks again (runs in flight go on; its runs keep its id)',
  http: { method: 'DELETE', path: '/v1/schedules/:id', pathParams: ['id'], status: 204 },
  mcpTool: 'schedules_delete',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: ScheduleIdSchema }),
  output: Type.Null(),
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: false,
});
