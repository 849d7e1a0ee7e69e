import type { InputOf, OutputOf } from './operation';
import { batchesCancel, batchesCreate, batchesEvents, batchesGet, batchesList, batchesResults, batchesRetry, batchesRows } from './routes/batch-routes';
import { meGet, tokensCreate, tokensList, tokensRevoke } from './routes/account-routes';
import { deviceApprove, deviceDeny, deviceLookup } from './routes/device-routes';
import {
  editorSlugsCheck,
  editorWorkflowsAssets,
  editorWorkflowsCreate,
  editorWorkflowsDelete,
  editorWorkflowsGet,
  editorWorkflowsLatest,
  editorWorkflowsList,
  editorWorkflowsPublish,
  editorWorkflowsRun,
  editorWorkflowsUpdate,
  editorWorkflowsVersion,
  editorWorkflowsVersions,
} from './routes/editor-routes';
import { queueGet } from './routes/queue-routes';
import { schedulesCreate, schedulesDelete, schedulesGet, schedulesList, schedulesPause, schedulesResume, schedulesTicks } from './routes/schedule-routes';
import { runsCancel, runsEstimate, runsEvents, runsGet, runsList } from './routes/run-routes';
import { uploadsCreate } from './routes/upload-routes';
import { webhooksRotate, webhooksSecret } from './routes/webhook-routes';

/**
 * Every JSON route beside the five operations, in the same shape: run records, history, event
 * streams, cancellation and cost estimates, batches, schedules, the organization's place in the queue, the webhook secret, file uploads, the caller's identity, tokens, the editor's workflow routes and device-login
 * approval. The HTTP app and the OpenAPI document loop over both registries; only the five
 * operations of {@link OPERATIONS} become MCP tools and SDK `ops`.
 */
export const ROUTES = {
  'runs.list': runsList,
  'runs.get': runsGet,
  'runs.events': runsEvents,
  'runs.cancel': runsCancel,
  'runs.estimate': runsEstimate,
  'batches.create': batchesCreate,
  'batches.list': batchesList,
  'batches.get': batchesGet,
  'batches.rows': batchesRows,
  'batches.events': batchesEvents,
  'batches.results': batchesResults,
  'batches.cancel': batchesCancel,
  'batches.retry': batchesRetry,
  'schedules.create': schedulesCreate,
  'schedules.list': schedulesList,
  'schedules.get': schedulesGet,
  'schedules.ticks': schedulesTicks,
  'schedules.pause': schedulesPause,
  'schedules.resume': schedulesResume,
  'schedules.delete': schedulesDelete,
  'queue.get': queueGet,
  'uploads.create': uploadsCreate,
  'webhooks.secret': webhooksSecret,
  'webhooks.rotate': webhooksRotate,
  'me.get': meGet,
  'tokens.list': tokensList,
  'tokens.create': tokensCreate,
  'tokens.revoke': tokensRevoke,
  'editor.workflows.list': editorWorkflowsList,
  'editor.workflows.create': editorWorkflowsCreate,
  'editor.workflows.get': editorWorkflowsGet,
  'editor.workflows.update': editorWorkflowsUpdate,
  'editor.workflows.delete': editorWorkflowsDelete,
  'editor.workflows.publish': editorWorkflowsPublish,
  'editor.workflows.run': editorWorkflowsRun,
  'editor.workflows.assets': editorWorkflowsAssets,
  'editor.workflows.versions': editorWorkflowsVersions,
  'editor.workflows.latest': editorWorkflowsLatest,
  'editor.workflows.version': editorWorkflowsVersion,
  'editor.slugs.check': editorSlugsCheck,
  'device.lookup': deviceLookup,
  'device.approve': deviceApprove,
  'device.deny': deviceDeny,
} as const;

export type Routes = typeof ROUTES;
export type RouteName = keyof Routes;
export type RouteInput<K extends RouteName> = InputOf<Routes[K]>;
export type RouteOutput<K extends RouteName> = OutputOf<Routes[K]>;

export const ROUTE_NAMES = Object.keys(ROUTES) as RouteName[];

/**
 * The routes the MCP servers serve as tools beside the five operations (docs/mcp.md): an agent
 * starts a batch and reads its progress. Their tools mirror the routes' declarations as the
 * operations' tools do (names, input schemas).
 */
export const MCP_ROUTE_NAMES = ['batches.create', 'batches.get'] as const satisfies readonly RouteName[];
export type McpRouteName = (typeof MCP_ROUTE_NAMES)[number];
