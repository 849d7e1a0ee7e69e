import { Type, type Static } from '@sinclair/typebox';
import { OutputsSchema } from './artifact';
import { RunErrorSchema, UsageSchema } from './run';

const event = <T extends string, P extends Parameters<typeof Type.Object>[0]>(type: T, payload: P) =>
  Type.Object({ type: Type.Literal(type), ...payload });

export const RunStartedEventSchema = event('run.started', { runId: Type.String({ format: 'uuid' }) });
export const StepStartedEventSchema = event('step.started', { nodeId: Type.String() });
export const StepProgressEventSchema = event('step.progress', { nodeId: Type.String(), message: Type.String() });
export const StepCompletedEventSchema = event('step.completed', { nodeId: Type.String(), usage: UsageSchema });
export const StepFailedEventSchema = event('step.failed', { nodeId: Type.String(), error: RunErrorSchema });
export const RunCompletedEventSchema = event('run.completed', { outputs: OutputsSchema });
export const RunFailedEventSchema = event('run.failed', { error: RunErrorSchema });

/** Every event of the `POST /v1/runs` stream, a union discriminated on `type`. */
export const RunEventSchema = Type.Union([
  RunStartedEventSchema,
  StepStartedEventSchema,
  StepProgressEventSchema,
  StepCompletedEventSchema,
  StepFailedEventSchema,
  RunCompletedEventSchema,
  RunFailedEventSchema,
]);
export type RunEvent = Static<typeof RunEventSchema>;
export type RunEventType = RunEvent['type'];

/** Events after which the stream sends `[DONE]`. */
export const TERMINAL_EVENT_TYPES: readonly RunEventType[] = ['run.completed', 'run.failed'];

/**
 * One event as it travels on a run's stream: the event and its per-run sequence number (1, 2,
 * 3, … without gaps), sent as the SSE `id:`, and, when known, the time of its append (epoch ms
 * by Redis' clock; not sent to clients). The bus, the API and the SDK share this one shape.
 */
export const SequencedEventSchema = Type.Object({ seq: Type.Integer({ minimum: 1 }), at: Type.Optional(Type.Integer({ minimum: 0 })), event: RunEventSchema });
export type SequencedEvent = Static<typeof SequencedEventSchema>;
