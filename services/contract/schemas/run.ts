import { Type, type Static } from '@sinclair/typebox';
import { OutputsSchema } from './artifact';
import { strictObject } from './strict-object';
import { WorkflowSchema } from './workflow';

/** Run status values. `cancelled` is ours (cancellation); the spec names the other four. */
export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Step status values (see docs/run-states.md). */
export const STEP_STATUSES = ['pending', 'queued', 'running', 'completed', 'failed', 'skipped', 'cancelled'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** The error shape of events and records. */
export const RunErrorSchema = Type.Object({ code: Type.String(), message: Type.String() });
export type RunError = Static<typeof RunErrorSchema>;

/** Step usage: cost in USD and duration in milliseconds. */
export const UsageSchema = Type.Object({
  costUsd: Type.Number({ minimum: 0 }),
  ms: Type.Number({ minimum: 0 }),
  cached: Type.Optional(Type.Boolean({ description: 'Present (true) only when the step was answered from the output cache: no node was called, nothing charged (docs/runs.md, Output caching)' })),
});
export type Usage = Static<typeof UsageSchema>;

export const StepRecordSchema = Type.Object({
  nodeId: Type.String(),
  status: Type.Union(STEP_STATUSES.map((s) => Type.Literal(s))),
  costUsd: Type.Number({ minimum: 0 }),
  ms: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'Duration; null until the step has run' }),
  error: Type.Optional(RunErrorSchema),
});
export type StepRecord = Static<typeof StepRecordSchema>;

/** A run status as records, summaries and the listing's `status` filter give it. */
export const RunStatusSchema = Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)));

const usd = (description: string) => Type.Number({ minimum: 0, description });
const time = (description: string) => Type.String({ format: 'date-time', description });
const timeOrNull = (description: string) => Type.Union([time(description), Type.Null()]);

/** One event's delivery to a run's webhook. */
export const WebhookDeliverySchema = Type.Object({
  seq: Type.Integer({ minimum: 1, description: "The event's seq in the run's stream" }),
  type: Type.String({ description: 'The event type' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], { description: 'pending: to be tried again at nextAttemptAt; failed: given up on' }),
  attempts: Type.Integer({ minimum: 1 }),
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's last answer; null when none came" }),
  lastError: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed' }),
  lastAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  deliveredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/** A run's webhook as its record shows it. */
export const RunWebhookSchema = Type.Object({
  url: Type.String(),
  events: Type.Array(Type.String()),
  deliveries: Type.Array(WebhookDeliverySchema),
});

/** Fields a run record and a run summary share. */
const runHead = {
  id: Type.String({ format: 'uuid' }),
  status: RunStatusSchema,
  error: Type.Union([RunErrorSchema, Type.Null()], { description: 'Why the run failed; null unless it failed or was cancelled' }),
  costUsd: usd('Money spent so far: the settled cost of its steps'),
  maxCostUsd: usd("The run's spend cap"),
  createdAt: time('When the run was accepted'),
  finishedAt: timeOrNull('When it reached its final status; null until then'),
  workflowRef: Type.Union([Type.String(), Type.Null()], {
    description: '`<org-slug>/<workflow-slug>@<version>` of the published version run; null for an inline definition',
  }),
  workflowId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
    description: "The run's workflow: the published version's, or the one whose editor draft ran; null for a plain inline definition",
  }),
  workflowName: Type.Union([Type.String(), Type.Null()], { description: "That workflow's name; null when workflowId is" }),
  // Optional in the schema (the service always sends them): SPEC.md's run records predate them.
  batchId: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'The batch whose row it runs (docs/batches.md); null: not a batch row' })),
  scheduleId: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'The schedule whose tick started it (docs/schedules.md); null: not a scheduled run' })),
};

/**
 * A run as `GET /v1/runs/:id` returns it. `outputs` is null unless the run completed, and then
 * exactly the map its `run.completed` event carried. Times are ISO 8601 (UTC), money USD.
 */
export const RunSchema = Type.Object({
  id: runHead.id,
  status: runHead.status,
  steps: Type.Array(StepRecordSchema),
  outputs: Type.Union([OutputsSchema, Type.Null()]),
  error: runHead.error,
  costUsd: runHead.costUsd,
  maxCostUsd: runHead.maxCostUsd,
  createdAt: runHead.createdAt,
  startedAt: timeOrNull('When it started running; null while pending'),
  finishedAt: runHead.finishedAt,
  deadlineAt: timeOrNull('When the run is cancelled if still unfinished (its maxDurationSeconds); null: no deadline of its own'),
  webhook: Type.Union([RunWebhookSchema, Type.Null()], { description: "The run's webhook and its deliveries (docs/webhooks.md); null without one" }),
  workflowRef: runHead.workflowRef,
  workflowId: runHead.workflowId,
  workflowName: runHead.workflowName,
  batchId: runHead.batchId,
  scheduleId: runHead.scheduleId,
  workflow: WorkflowSchema,
});
export type Run = Static<typeof RunSchema>;

/** One run in the `GET /v1/runs` listing: the record without steps and outputs. */
export const RunSummarySchema = Type.Object(runHead);
export type RunSummary = Static<typeof RunSummarySchema>;

/** A page of `GET /v1/runs`, newest first; `nextCursor` fetches the next (older) page, null on the last. */
export const RunListSchema = Type.Object({
  runs: Type.Array(RunSummarySchema),
  nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
});
export type RunList = Static<typeof RunListSchema>;

/** Largest and default page size of `GET /v1/runs`. */
export const RUN_LIST_MAX_LIMIT = 100;
export const RUN_LIST_DEFAULT_LIMIT = 20;

/** Query of `GET /v1/runs`; unknown parameters are rejected like unknown fields. */
export const RunListQuerySchema = strictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: RUN_LIST_MAX_LIMIT, description: `Page size, default ${RUN_LIST_DEFAULT_LIMIT}` })),
  cursor: Type.Optional(Type.String({ minLength: 1, description: "The previous page's nextCursor" })),
  status: Type.Optional(RunStatusSchema),
  workflow: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'A workflow address `<org-slug>/<workflow-slug>` or a workflow UUID: only runs of that workflow (any of its versions, and its editor draft runs)' }),
  ),
  batch: Type.Optional(Type.String({ format: 'uuid', description: "A batch's id: only its rows' runs" })),
  schedule: Type.Optional(Type.String({ format: 'uuid', description: "A schedule's id: only the runs its ticks started" })),
});
export type RunListQuery = Static<typeof RunListQuerySchema>;

/** Query of `GET /v1/runs/:id/events`: `after` resumes like the `Last-Event-ID` header. */
export const RunEventsQuerySchema = strictObject({
  after: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Send only events with a greater seq (the SSE id)' })),
});
export type RunEventsQuery = Static<typeof RunEventsQuerySchema>;
