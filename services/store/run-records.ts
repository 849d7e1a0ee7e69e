import { OUTPUT_CACHE_MODES, type OutputCacheMode } from '../contract/call-options';
import { RUN_STATUSES, STEP_STATUSES, type RunError, type RunStatus, type StepStatus } from '../contract/schemas/run';

/**
 * The run store's domain objects: a run and its steps as Postgres holds them, money as plain
 * integer micro-USD. Status strings are the contract's (`RUN_STATUSES`, `STEP_STATUSES`).
 */

/** One executable node of a run, as stored. */
export interface RunStepRecord {
  nodeId: string;
  status: StepStatus;
  /** Attempts started so far (0 until the first reservation). */
  attempt: number;
  /** Predecessors not yet completed; the step is ready at 0. */
  pendingDeps: number;
  /** Settled cost of the step (its final attempt), micro-USD. */
  costMicros: number;
  /** Money the current attempt holds against the run's cap; non-zero only while `running`. */
  reservedMicros: number;
  /** Duration of the settled attempt; null until the step has run. */
  ms: number | null;
  error: RunError | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A run with its steps, for `GET /v1/runs/:id` and the engine. */
export interface RunRecord {
  id: string;
  orgId: string;
  userId: string;
  tokenId: string | null;
  workflowId: string | null;
  workflowVersionId: string | null;
  /** `<org-slug>/<workflow-slug>@<version>` of the published version run; null for an inline definition. */
  workflowRef: string | null;
  /** The name of the workflow `workflowId` names; null without one. */
  workflowName: string | null;
  /** The batch whose row it runs, the schedule whose tick started it; null: neither. */
  batchId: string | null;
  scheduleId: string | null;
  status: RunStatus;
  /** The definition as run (inline, or a snapshot of the resolved version). */
  definition: unknown;
  inputs: unknown;
  /** Null unless the run completed. */
  outputs: Record<string, unknown> | null;
  error: RunError | null;
  capMicros: number;
  spentMicros: number;
  reservedMicros: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** When the run is cancelled if still unfinished (its maxDurationSeconds); null: no deadline of its own. */
  deadlineAt: Date | null;
  /** The run's webhook and its deliveries (docs/webhooks.md); null without one. */
  webhook: RunWebhookRecord | null;
  steps: RunStepRecord[];
}

/** What {@link RunRepository.createRun} stores. */
export interface NewRun {
  /** The run's id, when the caller chose it (a UUID); else Postgres makes one. */
  id?: string;
  orgId: string;
  userId: string;
  tokenId: string | null;
  definition: unknown;
  inputs: unknown;
  /** The run's hard spend cap, micro-USD. */
  capMicros: number;
  workflowId?: string | null;
  workflowVersionId?: string | null;
  /**
   * The request's `Idempotency-Key` and the hash of its request (docs/runs.md, Idempotent run
   * creation): an unexpired key of the organization is answered with its run instead of storing
   * this one ({@link RunRepository.createRunOnce}).
   */
  idempotency?: { key: string; requestHash: string };
  /** Where the run's events are POSTed, and which (docs/webhooks.md). */
  webhook?: { url: string; events: readonly string[] };
  /** The run is cancelled if still unfinished this long after it is stored (docs/runs.md, Cancellation). */
  maxDurationSeconds?: number;
  /** How the run's steps use the output cache (the Output-Cache option); absent: auto. */
  outputCache?: OutputCacheMode;
  /** The catalog file entries it starts with, by node id (`NodeRegistry.pin`); absent: none. */
  nodeEntries?: Record<string, unknown> | null;
  /** The schedule whose tick starts it (docs/schedules.md). */
  scheduleId?: string;
  /** Store it already `running` (started now): saves the separate `markRunning` round trip. */
  start?: boolean;
  /** Refuse (`insufficient_credit`, see insufficientCredit) unless the organization's balance is positive, checked in the same statement. */
  requireCredit?: boolean;
  /**
   * One entry per executable node; `pendingDeps` = its executable predecessors. A step with a
   * `reservation` (only in a run stored with `start`) is stored `running` under that attempt
   * token, holding its estimate, as if `reserve` had been called: the worker that takes its job
   * runs it without that round trip. The reservations must fit in the cap together.
   */
  steps: readonly { nodeId: string; pendingDeps: number; reservation?: { estimateMicros: number; attemptToken: string } }[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `id` can name a row at all; anything else would make Postgres raise on the `::uuid` cast. */
export function isUuid(id: string): boolean {
  return UUID.test(id);
}

/** A run status read from the database; an unknown string means someone wrote around the store. */
export function parseRunStatus(value: string, runId: string): RunStatus {
  if (!(RUN_STATUSES as readonly string[]).includes(value)) throw new Error(`run ${runId} has unknown status "${value}"`);
  return value as RunStatus;
}

/** A step status read from the database. */
export function parseStepStatus(value: string, where: string): StepStatus {
  if (!(STEP_STATUSES as readonly string[]).includes(value)) throw new Error(`step ${where} has unknown status "${value}"`);
  return value as StepStatus;
}

/** A stored `error` column as the contract's `{ code, message }`, or null. */
export function parseRunError(value: unknown): RunError | null {
  if (value === null || value === undefined || typeof value !== 'object') return null;
  const { code, message } = value as Record<string, unknown>;
  return { code: typeof code === 'string' ? code : 'internal', message: typeof message === 'string' ? message : '' };
}

/** JSON text for a `jsonb` parameter; `undefined` would silently become SQL NULL, so it is refused. */
export function jsonParam(value: unknown, what: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new RangeError(`${what} must be a JSON value`);
  return text;
}

/** A non-negative micro-USD amount from a caller (estimate, cost, cap). */
export function assertMicros(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative whole number of micro-USD, got ${value}`);
}

/** The parts of a run a step executor needs. */
export interface RunContextRecord {
  orgId: string;
  status: RunStatus;
  definition: unknown;
  inputs: unknown;
  /** How the run's steps use the output cache; `auto` unless the run asked otherwise. */
  outputCache: OutputCacheMode;
  /** The catalog file entries the run started with, by node id (`NodeRegistry.pin`); null: none. */
  nodeEntries: Record<string, unknown> | null;
  /** The batch whose row it runs; null: a run of its own. */
  batchId: string | null;
}

/** One event's delivery as far as it has got. */
export interface WebhookDeliveryRecord {
  seq: number;
  eventType: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  firstAttemptAt: Date;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
}

/** A run's webhook as its record shows it. */
export interface RunWebhookRecord {
  url: string;
  events: string[];
  deliveries: WebhookDeliveryRecord[];
}

/** A stored `output_cache` column as a mode: null (runs stored before the option, or without it) is `auto`. */
export function outputCacheModeOf(stored: string | null): OutputCacheMode {
  return (OUTPUT_CACHE_MODES as readonly string[]).includes(stored ?? '') ? (stored as OutputCacheMode) : 'auto';
}
