import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { runsCreate } from '../ops/runs-create';
import { ArtifactInputSchema } from '../schemas/artifact';
import {
  BATCH_DEFAULT_CONCURRENCY,
  BATCH_MAX_BODY_ROWS,
  BATCH_MAX_CONCURRENCY,
  BATCH_MAX_ROWS,
  BatchIdSchema,
  BatchListSchema,
  BatchResultsSchema,
  BatchRowPageSchema,
  BatchRowsQuerySchema,
  BatchSchema,
} from '../schemas/batch';
import { MaxCostUsdSchema } from '../schemas/max-cost';
import { WorkflowSchema } from '../schemas/workflow';
import { strictObject } from '../schemas/strict-object';

const errorsOfReads = ['validation_failed', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited'] as const;

/**
 * `POST /v1/batches`: one workflow run once per row of inputs, under one spend cap, in the
 * background (docs/batches.md). Every row is checked before anything runs; answers the batch.
 */
export const batchesCreate = defineOperation({
  name: 'batches.create',
  summary: 'Start a batch: a workflow run once per row of inputs, under one spend cap; answers the batch',
  http: { method: 'POST', path: '/v1/batches', pathParams: [], status: 201, options: ['maxDurationSeconds', 'idempotencyKey', 'webhookUrl', 'outputCache'] },
  mcpTool: 'batches_create',
  scope: 'run',
  auth: 'required',
  input: strictObject(
    {
      workflow: Type.Optional(WorkflowSchema),
      workflowRef: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: '<id>@<version>, resolved once: every row runs the same version' })),
      rows: Type.Optional(
        Type.Array(Type.Record(Type.String(), Type.Union([ArtifactInputSchema, Type.Unknown()])), {
          minItems: 1,
          maxItems: BATCH_MAX_BODY_ROWS,
          description: `The rows, each a map from the workflow's input names to an artifact ({"value": …} or {"ref": URL}) or a plain value (a URL for file inputs); at most ${BATCH_MAX_BODY_ROWS.toLocaleString('en-US')}: larger batches upload a rows file`,
        }),
      ),
      rowsFile: Type.Optional(
        Type.String({ minLength: 1, maxLength: 4096, description: `The ref of a rows file uploaded with POST /v1/uploads: JSON Lines or CSV with a header line of input names, up to ${BATCH_MAX_ROWS.toLocaleString('en-US')} rows` }),
      ),
      rowsFormat: Type.Optional(Type.Union([Type.Literal('jsonl'), Type.Literal('csv')], { description: "The rows file's format; default: JSON Lines when it starts with {, else CSV" })),
      skipBadRows: Type.Optional(Type.Boolean({ description: 'false (default): any bad row refuses the batch (400, every bad row listed); true: bad rows are skipped and listed in skippedRows' })),
      maxCostUsd: Type.Optional(Type.Number({ minimum: 0.000001, description: "The batch spend cap in USD: its rows together never spend more; default: rows × rowMaxCostUsd" })),
      rowMaxCostUsd: Type.Optional(MaxCostUsdSchema),
      concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: BATCH_MAX_CONCURRENCY, description: `Rows in flight at once, default ${BATCH_DEFAULT_CONCURRENCY}` })),
    },
    {
      oneOf: [{ required: ['workflow'] }, { required: ['workflowRef'] }],
      'x-error': 'give exactly one of "workflow" (an inline definition) or "workflowRef" (a published reference such as "acme/flow@1.2.0")',
    },
  ),
  output: BatchSchema,
  response: 'json',
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'insufficient_scope', 'insufficient_credit', 'not_found', 'rate_limited', 'idempotency_key_reused'],
  spendsMoney: true,
  readOnly: false,
  agent: {
    description:
      'Start a batch: one workflow (workflow inline, or workflowRef) run once per row of inputs (rows: an array of maps from input name to a value or an artifact), in the background, under one spend cap for the whole batch (maxCostUsd; default rows × rowMaxCostUsd, each row capped at rowMaxCostUsd, default 0.50). ' +
      'Every row is checked first: a bad row refuses the batch with its row number and field, unless skipBadRows is true. Returns the batch at once (its id, rows by status, spend against the cap); ' +
      'read its progress with {batches.get}. Rows of a batch wait behind interactive runs.',
    // runs.create's example workflow (input a, a + 2), once per row.
    example: {
      workflow: runsCreate.agent!.example.workflow!,
      rows: [{ a: 1 }, { a: 2 }, { a: 3 }],
      maxCostUsd: 0.05,
    },
  },
});

/** `GET /v1/batches`: the organization's batches, newest first. */
export const batchesList = defineOperation({
  name: 'batches.list',
  summary: "List your organization's batches, newest first",
  http: { method: 'GET', path: '/v1/batches', pathParams: [] },
  mcpTool: 'batches_list',
  scope: 'run',
  auth: 'required',
  input: strictObject({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size, default 20' })),
    cursor: Type.Optional(Type.String({ minLength: 1, description: "The previous page's nextCursor" })),
  }),
  output: BatchListSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/** `GET /v1/batches/:id`: a batch's progress: counts, spend against its cap, rate, time left. */
export const batchesGet = defineOperation({
  name: 'batches.get',
  summary: "Get a batch's progress: rows by status, spend against its cap, rows per second, time left",
  http: { method: 'GET', path: '/v1/batches/:id', pathParams: ['id'] },
  mcpTool: 'batches_get',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: BatchIdSchema }),
  output: BatchSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: true,
  agent: {
    description:
      "Read a batch's progress: its status (running, cancelling, completed, cancelled), rows by status, what it has spent and holds against its cap, rows per second and an estimate of the seconds left. " +
      'Call it again until the status is completed or cancelled; each row\'s outputs are in GET /v1/batches/:id/rows and the results file.',
    example: { id: '2f1c7c1e-3c1b-4c36-9d0e-6f3b8f1a2b4c' },
  },
});

/** `GET /v1/batches/:id/rows`: a batch's rows in row order, each with its run. */
export const batchesRows = defineOperation({
  name: 'batches.rows',
  summary: "List a batch's rows in row order, each with its run, cost, outputs and error",
  http: { method: 'GET', path: '/v1/batches/:id/rows', pathParams: ['id'] },
  mcpTool: 'batches_rows',
  scope: 'run',
  auth: 'required',
  input: BatchRowsQuerySchema,
  output: BatchRowPageSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: true,
});

/**
 * `GET /v1/batches/:id/events`: the batch's progress as a stream: one `batch.row` per row ended
 * (id: its place among the batch's ended rows, so `Last-Event-ID` resumes after it), a
 * `batch.progress` snapshot after each burst, and `batch.ended` then `[DONE]`.
 */
export const batchesEvents = defineOperation({
  name: 'batches.events',
  summary: "Follow a batch's progress: each row as it ends, snapshots of the counts, its end",
  http: { method: 'GET', path: '/v1/batches/:id/events', pathParams: ['id'] },
  mcpTool: 'batches_events',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: BatchIdSchema, after: Type.Optional(Type.Integer({ minimum: 0, description: 'Resume after this event id (as Last-Event-ID does)' })) }),
  output: BatchSchema,
  response: 'sse',
  holdsStream: true,
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: true,
});

/** `GET /v1/batches/:id/results`: where to download the results file, as far as the batch has got. */
export const batchesResults = defineOperation({
  name: 'batches.results',
  summary: "Get a link to a batch's results file (JSON Lines or CSV): every ended row's status, outputs, cost and error",
  http: { method: 'GET', path: '/v1/batches/:id/results', pathParams: ['id'] },
  mcpTool: 'batches_results',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: BatchIdSchema, format: Type.Optional(Type.Union([Type.Literal('jsonl'), Type.Literal('csv')], { description: 'jsonl (default) or csv (outputs flattened to one column each)' })) }),
  output: BatchResultsSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: true,
});

/** `POST /v1/batches/:id/cancel`: rows not started never start; rows in flight are cancelled as runs are. */
export const batchesCancel = defineOperation({
  name: 'batches.cancel',
  summary: 'Cancel a batch: rows not started never start, rows in flight are cancelled',
  http: { method: 'POST', path: '/v1/batches/:id/cancel', pathParams: ['id'], body: 'empty' },
  mcpTool: 'batches_cancel',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: BatchIdSchema }),
  output: BatchSchema,
  response: 'json',
  errors: errorsOfReads,
  spendsMoney: false,
  readOnly: false,
});

/** `POST /v1/batches/:id/retry`: the failed and cancelled rows of an ended batch run again, as its next attempt. */
export const batchesRetry = defineOperation({
  name: 'batches.retry',
  summary: "Run an ended batch's failed and cancelled rows again, as its next attempt; pays only for the rows it runs",
  http: { method: 'POST', path: '/v1/batches/:id/retry', pathParams: ['id'] },
  mcpTool: 'batches_retry',
  scope: 'run',
  auth: 'required',
  input: strictObject({
    id: BatchIdSchema,
    maxCostUsd: Type.Optional(Type.Number({ minimum: 0.000001, description: "A new batch spend cap (all attempts together), at least what it has spent; default: the batch's cap" })),
  }),
  output: BatchSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited', 'conflict'],
  spendsMoney: true,
  readOnly: false,
});
