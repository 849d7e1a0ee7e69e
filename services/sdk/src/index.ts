/**
 * The TypeScript SDK of the workflow execution service: the five operations of the contract
 * (`client.ops`), the routes beside them (`client.routes`), the named functions of the spec
 * (`searchNodes`, `getNode`, `getWorkflow`, `run`, `startRun`), the workflow draft builder
 * (`createWorkflow`), uploads, and one error class per failure. No Node API is used here, so this
 * entry point runs in browsers too; `@svc/sdk/node` adds file helpers.
 */
export { Client, type ClientOptions, type Ops, type RouteCalls, type RunCallOptions } from './client';
export type { BytesCallOptions, CallOptions } from './call';
export { DEFAULT_BASE_URL, type FetchLike, type TransportOptions } from './transport';
export { getNode, getWorkflow, run, searchNodes, startRun, type NodeSearch, type RunInput } from './functions';
export { RunHandle, type ResumeOptions, type RetryNotice, type RunEventWithSeq } from './run-handle';
export { upload, type UploadData, type UploadOptions } from './upload';
export { createSchedule, deleteSchedule, getSchedule, listSchedules, pauseSchedule, resumeSchedule, scheduleTicks, tickLine, type ScheduleInput } from './schedules';
export { BatchHandle, createBatch, getBatch, type BatchFollowOptions, type BatchInput, type BatchProgressEvent } from './batches';
export { describeRunEvent, durationLine, usdLine } from './event-lines';
export * from './workflow-builder';
export {
  AuthenticationError,
  ConnectionError,
  InsufficientCreditError,
  InvalidInputError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionError,
  RateLimitError,
  RunFailedError,
  ServerError,
  ServiceError,
} from './errors';
export {
  OPERATIONS,
  ROUTES,
  type Artifact,
  type ArtifactInput,
  type Batch,
  type BatchEvent,
  type BatchRow,
  type ArtifactKind,
  type Connector,
  type NodeSpec,
  type OpInput,
  type OpName,
  type OpOutput,
  type Outputs,
  type Port,
  type PublishedWorkflow,
  type RouteInput,
  type RouteName,
  type RouteOutput,
  type Run,
  type RunError,
  type RunEvent,
  type RunStatus,
  type Schedule,
  type ScheduleTickBody,
  type Workflow,
} from '../../contract';
