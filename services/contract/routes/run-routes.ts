import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { runsCreate } from '../ops/runs-create';
import { RunEstimateSchema } from '../schemas/estimate';
import { RunEventsQuerySchema, RunListQuerySchema, RunListSchema, RunSchema } from '../schemas/run';
import { strictObject } from '../schemas/strict-object';

/** A run id as the path carries it: any text (one that is not a UUID names no run: 404, not 400). */
const RunIdSchema = Type.String({ minLength: 1, description: 'Run id (the runId of its run.started event)' });

/** `GET /v1/runs`: the organization's runs, newest first. */
export const runsList = defineOperation({
  name: 'runs.list',
  summary: "List your organization's runs, newest first",
  http: { method: 'GET', path: '/v1/runs', pathParams: [] },
  mcpTool: 'runs_list',
  scope: 'run',
  auth: 'required',
  input: RunListQuerySchema,
  output: RunListSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/** `GET /v1/runs/:id`: one run record with its steps and, once completed, its outputs. */
export const runsGet = defineOperation({
  name: 'runs.get',
  summary: 'Get a run record',
  http: { method: 'GET', path: '/v1/runs/:id', pathParams: ['id'] },
  mcpTool: 'runs_get',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: RunIdSchema }),
  output: RunSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/**
 * `GET /v1/runs/:id/events`: the run's events, replayed after `Last-Event-ID` (the call's
 * `lastEventId`) or `?after=`, then followed live to the terminal event and `[DONE]`.
 */
export const runsEvents = defineOperation({
  name: 'runs.events',
  summary: "Replay and follow a run's events",
  http: { method: 'GET', path: '/v1/runs/:id/events', pathParams: ['id'] },
  mcpTool: 'runs_events',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: RunIdSchema, ...RunEventsQuerySchema.properties }),
  output: RunSchema,
  response: 'sse',
  holdsStream: true,
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});

/**
 * `POST /v1/runs/:id/cancel`: stops an unfinished run (docs/runs.md, Cancellation). Only the user
 * who started it may; repeating it is harmless. Answers the run as it is afterwards: `cancelled`,
 * or as it finished when it ended before the cancellation reached it.
 */
export const runsCancel = defineOperation({
  name: 'runs.cancel',
  summary: 'Cancel a run you started',
  http: { method: 'POST', path: '/v1/runs/:id/cancel', pathParams: ['id'], body: 'empty' },
  mcpTool: 'runs_cancel',
  scope: 'run',
  auth: 'required',
  input: strictObject({ id: RunIdSchema }),
  output: RunSchema,
  response: 'json',
  errors: ['validation_failed', 'unauthorized', 'insufficient_scope', 'forbidden', 'not_found', 'rate_limited'],
  spendsMoney: false,
  readOnly: false,
});

/**
 * `POST /v1/runs/estimate` with the body of `runs.create`: what the run would cost, node by node
 * and in all, and whether that fits the cap and the balance; nothing is stored or run
 * (docs/runs.md, Cost estimates).
 */
export const runsEstimate = defineOperation({
  name: 'runs.estimate',
  summary: 'Estimate what a run would cost, without running it',
  http: { method: 'POST', path: '/v1/runs/estimate', pathParams: [] },
  mcpTool: 'runs_estimate',
  scope: 'read',
  auth: 'required',
  input: runsCreate.input,
  output: RunEstimateSchema,
  response: 'json',
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'insufficient_scope', 'not_found', 'rate_limited'],
  spendsMoney: false,
  readOnly: true,
});
