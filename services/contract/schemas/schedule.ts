import { Type, type Static } from '@sinclair/typebox';
import { MAX_MAP_ENTRIES } from '../input-limits';
import { ArtifactInputSchema } from './artifact';
import { RunErrorSchema, RunStatusSchema } from './run';
import { strictObject } from './strict-object';

/** A missed tick older than this is never run late (docs/schedules.md, Missed ticks). */
export const SCHEDULE_MAX_CATCH_UP_SECONDS = 86_400;
export const SCHEDULE_DEFAULT_CATCH_UP_SECONDS = 3_600;
/** How many coming ticks a schedule shows, and how many of its latest ticks. */
export const SCHEDULE_NEXT_TICKS = 5;
export const SCHEDULE_RECENT_TICKS = 10;

export const SCHEDULE_STATUSES = ['active', 'paused'] as const;
export const ScheduleStatusSchema = Type.Union(SCHEDULE_STATUSES.map((status) => Type.Literal(status)), {
  description: 'active (it ticks), paused (by its caller, or by itself: pauseReason says why)',
});
export type ScheduleStatus = Static<typeof ScheduleStatusSchema>;

export const SCHEDULE_TICK_STATUSES = ['starting', 'started', 'failed', 'skipped'] as const;
export const ScheduleTickStatusSchema = Type.Union(SCHEDULE_TICK_STATUSES.map((status) => Type.Literal(status)), {
  description: 'starting (its run is being stored), started (it started runId), failed (its run could not start: error says why), skipped (missed or over budget: error says why)',
});

const timeOrNull = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

/** One tick of a schedule, or one run of ticks skipped together. */
export const ScheduleTickSchema = Type.Object({
  tickAt: Type.String({ format: 'date-time', description: 'The tick (for skipped ticks: the first of them)' }),
  status: ScheduleTickStatusSchema,
  runId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'The run it started (GET /v1/runs/:id)' }),
  runStatus: Type.Union([RunStatusSchema, Type.Null()], { description: "That run's status now" }),
  costUsd: Type.Union([Type.Number(), Type.Null()], { description: 'What that run has cost so far' }),
  skippedThrough: timeOrNull('For skipped ticks: the last of them'),
  skippedCount: Type.Integer({ minimum: 0, description: 'For skipped ticks: how many' }),
  error: Type.Union([RunErrorSchema, Type.Null()], { description: 'Why it failed or was skipped' }),
  recordedAt: Type.String({ format: 'date-time' }),
});
export type ScheduleTickBody = Static<typeof ScheduleTickSchema>;

export const SchedulePauseReasonSchema = Type.Object({
  code: Type.String({ description: 'paused (by a caller), workflow_not_found, insufficient_credit, or the code of the refusal of its run (validation_failed when the workflow no longer takes its inputs)' }),
  message: Type.String(),
  by: Type.Union([Type.Literal('caller'), Type.Literal('service')]),
  at: Type.String({ format: 'date-time' }),
});

/** A schedule as `GET /v1/schedules/:id` returns it. Money in USD, times ISO 8601 (UTC). */
export const ScheduleSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.Union([Type.String(), Type.Null()]),
  status: ScheduleStatusSchema,
  workflowRef: Type.String({ description: 'The published workflow as given (exact version, bare major, or latest), resolved at each tick' }),
  inputs: Type.Record(Type.String(), Type.Unknown(), { description: 'The inputs of every run' }),
  cron: Type.String(),
  timezone: Type.String({ description: 'The IANA time zone its cron expression reads in' }),
  maxCostUsd: Type.Number({ description: "Each run's spend cap" }),
  monthlyBudgetUsd: Type.Union([Type.Number(), Type.Null()], { description: 'What its runs may spend in a calendar month of its time zone; null: no budget' }),
  spentThisMonthUsd: Type.Number({ description: "What its runs cost this month (its time zone's), runs in flight counted at their cap" }),
  catchUpSeconds: Type.Integer({ minimum: 0, description: 'A tick missed while no worker ran is run late when at most this old, else skipped and recorded' }),
  maxDurationSeconds: Type.Union([Type.Integer(), Type.Null()], { description: "Each run's deadline (Max-Duration-Seconds); null: none" }),
  outputCache: Type.Union([Type.String(), Type.Null()], { description: "Each run's Output-Cache; null: auto" }),
  pauseReason: Type.Union([SchedulePauseReasonSchema, Type.Null()], { description: 'Why it is paused; null while active' }),
  nextTicks: Type.Array(Type.String({ format: 'date-time' }), { description: `Its next ${SCHEDULE_NEXT_TICKS} ticks; empty while paused` }),
  recentTicks: Type.Array(ScheduleTickSchema, { description: `Its latest ${SCHEDULE_RECENT_TICKS} ticks, newest first (GET /v1/schedules/:id/ticks pages through all)` }),
  webhook: Type.Union([Type.Object({ url: Type.String(), state: Type.Union([Type.Literal('waiting'), Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]), attempts: Type.Integer({ minimum: 0 }) }), Type.Null()], {
    description: 'Where its pauses are POSTed (schedule.paused): waiting (no pause yet), pending, delivered, failed; null: none',
  }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type Schedule = Static<typeof ScheduleSchema>;

export const ScheduleListSchema = Type.Object({
  schedules: Type.Array(ScheduleSchema),
  nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
});
export type ScheduleList = Static<typeof ScheduleListSchema>;

export const ScheduleTickPageSchema = Type.Object({
  ticks: Type.Array(ScheduleTickSchema),
  nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { description: 'Fetches the older ticks after this page; null on the last' }),
});
export type ScheduleTickPage = Static<typeof ScheduleTickPageSchema>;

export const ScheduleIdSchema = Type.String({ minLength: 1, description: 'Schedule id' });

/** What `schedules.create` takes. */
export const ScheduleCreateSchema = strictObject({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A label for people' })),
  workflowRef: Type.String({ minLength: 1, maxLength: 400, description: 'A published workflow: <org>/<slug>@<version>, @<major> or @latest (no @: latest), resolved at each tick' }),
  inputs: Type.Optional(
    Type.Record(Type.String(), ArtifactInputSchema, { maxProperties: MAX_MAP_ENTRIES, description: "The inputs of every run, as runs.create takes them: artifacts such as {\"value\": \"text\"} (checked now against the workflow's interface)" }),
  ),
  cron: Type.String({ minLength: 1, maxLength: 200, description: 'A cron expression: five fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly' }),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'An IANA time zone such as Europe/Paris; default UTC' })),
  maxCostUsd: Type.Optional(Type.Number({ minimum: 0.000001, description: "Each run's spend cap in USD, as runs.create's (default 0.50; larger caps are lowered to 1.00)" })),
  monthlyBudgetUsd: Type.Optional(Type.Number({ minimum: 0.000001, description: 'What its runs may spend in a calendar month of its time zone: a tick whose run could take it over is skipped' })),
  catchUpSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: SCHEDULE_MAX_CATCH_UP_SECONDS, description: `A tick missed while no worker ran is run late when at most this old; default ${SCHEDULE_DEFAULT_CATCH_UP_SECONDS}` })),
});
