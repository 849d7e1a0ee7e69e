import { Type, type Static } from '@sinclair/typebox';
import { OutputsSchema } from './artifact';

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
export const UsageSchema = Type.Object({ costUsd: Type.Number({ minimum: 0 }), ms: Type.Number({ minimum: 0 }) });
export type Usage = Static<typeof UsageSchema>;

export const StepRecordSchema = Type.Object({
  nodeId: Type.String(),
  status: Type.Union(STEP_STATUSES.map((s) => Type.Literal(s))),
  costUsd: Type.Number({ minimum: 0 }),
  ms: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'Duration; null until the step has run' }),
  error: Type.Optional(RunErrorSchema),
});
export type StepRecord = Static<typeof StepRecordSchema>;

/** A run as `GET /v1/runs/:id` returns it. `outputs` is null unless the run completed. */
export const RunSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  status: Type.Union(RUN_STATUSES.map((s) => Type.Literal(s))),
  steps: Type.Array(StepRecordSchema),
  outputs: Type.Union([OutputsSchema, Type.Null()]),
});
export type Run = Static<typeof RunSchema>;
