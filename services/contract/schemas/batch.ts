import { Type, type Static } from '@sinclair/typebox';
import { OutputsSchema } from './artifact';
import { RunErrorSchema } from './run';
import { strictObject } from './strict-object';

/** Most rows one batch takes (docs/batches.md, Limits). */
export const BATCH_MAX_ROWS = 100_000;
/** Most rows a batch may give in its JSON body; larger batches upload a rows file. */
export const BATCH_MAX_BODY_ROWS = 10_000;
/** Most rows of one batch in flight at once, and the default. */
export const BATCH_MAX_CONCURRENCY = 1_000;
export const BATCH_DEFAULT_CONCURRENCY = 50;
/** Most refused rows a batch record lists (the count is always whole). */
export const BATCH_LISTED_PROBLEMS = 100;

export const BATCH_STATUSES = ['running', 'cancelling', 'completed', 'cancelled'] as const;
export const BatchStatusSchema = Type.Union(BATCH_STATUSES.map((status) => Type.Literal(status)), {
  description: 'running (rows start and end), cancelling (cancelled; rows in flight are ending), completed (every row ended), cancelled (ended after a cancellation or its deadline)',
});
export type BatchStatus = Static<typeof BatchStatusSchema>;

export const BATCH_ROW_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export const BatchRowStatusSchema = Type.Union(BATCH_ROW_STATUSES.map((status) => Type.Literal(status)), {
  description: "pending (not started), running (its run is under way), completed, failed, cancelled (its run's end, or never started)",
});
export type BatchRowStatus = Static<typeof BatchRowStatusSchema>;

/** A row refused as the batch was created, by its number and the input at fault. */
export const RowProblemSchema = Type.Object({
  row: Type.Integer({ minimum: 1, description: "The row's number, from 1, as in the file (a CSV's header line is not a row)" }),
  field: Type.Union([Type.String(), Type.Null()], { description: 'The input at fault; null: the row as a whole' }),
  message: Type.String(),
});
export type RowProblemBody = Static<typeof RowProblemSchema>;

const timeOrNull = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });
const count = (description: string) => Type.Integer({ minimum: 0, description });

/** A batch as `GET /v1/batches/:id` returns it. Money in USD, times ISO 8601 (UTC). */
export const BatchSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  status: BatchStatusSchema,
  attempt: Type.Integer({ minimum: 1, description: '1, then one more for each retry of its failed rows' }),
  workflowRef: Type.Union([Type.String(), Type.Null()], { description: 'The workflowRef as given; null for an inline definition' }),
  workflowId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
  workflowVersionId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'The published version every row runs (resolved once, at creation)' }),
  rows: Type.Object({
    total: count('Rows that run (skipped rows excluded)'),
    pending: count('Not started yet'),
    running: count('Runs under way'),
    completed: count('Ended completed'),
    failed: count('Ended failed'),
    cancelled: count('Ended cancelled, or never started because the batch was cancelled'),
    skipped: count('Refused at creation (skipBadRows): listed in skippedRows'),
  }),
  maxCostUsd: Type.Number({ description: 'The batch spend cap: its rows together never spend more' }),
  rowMaxCostUsd: Type.Number({ description: "Each row's run's spend cap" }),
  spentUsd: Type.Number({ description: 'What its ended rows cost, every attempt together' }),
  heldUsd: Type.Number({ description: "Held against the cap for rows in flight: each one's cap, until it ends" }),
  concurrency: Type.Integer({ minimum: 1, description: 'Rows in flight at most' }),
  rowsPerSecond: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'Rows ended per second in this attempt so far; null before the first ends' }),
  etaSeconds: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'Estimated seconds until every row has ended, at that rate; null when unknown or ended' }),
  stopReason: Type.Union([RunErrorSchema, Type.Null()], { description: 'Why it stopped starting rows early (cancelled, deadline, spend cap, credit); null otherwise' }),
  skippedRows: Type.Array(RowProblemSchema, { description: `Rows refused at creation with skipBadRows (the first ${BATCH_LISTED_PROBLEMS}; rows.skipped counts all)` }),
  deadlineAt: timeOrNull('When it is cancelled if still running (Max-Duration-Seconds); null: none'),
  webhook: Type.Union([Type.Object({ url: Type.String(), state: Type.Union([Type.Literal('waiting'), Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]), attempts: count('Deliveries tried') }), Type.Null()], {
    description: "The batch-end webhook: waiting (the batch runs), pending (being delivered), delivered, failed (gave up after 24 hours); null: none",
  }),
  createdAt: Type.String({ format: 'date-time' }),
  attemptStartedAt: Type.String({ format: 'date-time', description: 'When this attempt started (creation, or the last retry)' }),
  finishedAt: timeOrNull('When its last row ended; null while it runs'),
});
export type Batch = Static<typeof BatchSchema>;

export const BatchListSchema = Type.Object({
  batches: Type.Array(BatchSchema),
  nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
});
export type BatchList = Static<typeof BatchListSchema>;

/** One row of a batch: its run and how it ended. */
export const BatchRowSchema = Type.Object({
  row: Type.Integer({ minimum: 1 }),
  status: BatchRowStatusSchema,
  runId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'Its latest run (GET /v1/runs/:id); null until it starts' }),
  attempts: count('Runs it has had (a retry of the batch runs it again)'),
  costUsd: Type.Number({ description: 'What its runs cost, all attempts' }),
  outputs: Type.Union([OutputsSchema, Type.Null()], { description: "Its run's outputs once completed" }),
  error: Type.Union([RunErrorSchema, Type.Null()], { description: 'Why it failed or was cancelled' }),
  finishedAt: timeOrNull('When it ended'),
});
export type BatchRow = Static<typeof BatchRowSchema>;

export const BatchRowPageSchema = Type.Object({
  rows: Type.Array(BatchRowSchema),
  nextCursor: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { description: 'Fetches the rows after this page; null on the last' }),
});

/** Where to download a batch's results file. */
export const BatchResultsSchema = Type.Object({
  url: Type.String({ description: 'The file: a signed URL (no token needed) that lists the rows ended when it is fetched, in row order' }),
  format: Type.Union([Type.Literal('jsonl'), Type.Literal('csv')]),
  expiresAt: Type.String({ format: 'date-time', description: 'The URL works until then; ask again for a new one' }),
  rowsEnded: count('Rows ended so far (the file lists these)'),
  complete: Type.Boolean({ description: 'The batch has ended: the file lists every row' }),
});

/** The events of a batch's progress stream (`GET /v1/batches/:id/events`). */
const event = <T extends string, P extends Parameters<typeof Type.Object>[0]>(type: T, payload: P) => Type.Object({ type: Type.Literal(type), ...payload });
export const BatchRowEndedEventSchema = event('batch.row', {
  row: Type.Integer({ minimum: 1 }),
  status: BatchRowStatusSchema,
  runId: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
  costUsd: Type.Number(),
  error: Type.Union([RunErrorSchema, Type.Null()]),
});
export const BatchProgressEventSchema = event('batch.progress', { batch: BatchSchema });
export const BatchEndedEventSchema = event('batch.ended', { batch: BatchSchema });
export const BatchEventSchema = Type.Union([BatchRowEndedEventSchema, BatchProgressEventSchema, BatchEndedEventSchema]);
export type BatchEvent = Static<typeof BatchEventSchema>;

export const BatchIdSchema = Type.String({ minLength: 1, description: 'Batch id' });

export const BatchRowsQuerySchema = strictObject({
  id: BatchIdSchema,
  status: Type.Optional(BatchRowStatusSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size, default 100' })),
  cursor: Type.Optional(Type.String({ minLength: 1, description: "The previous page's nextCursor" })),
});
