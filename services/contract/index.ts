export { CALL_OPTIONS, DEFAULT_WEBHOOK_EVENTS, OUTPUT_CACHE_MODES, parseCallOption, WEBHOOK_EVENT_TYPES, type CallOptionName, type CallOptionValues, type OutputCacheMode } from './call-options';
export { WEBHOOK_HEADERS, WEBHOOK_SECRET_PREFIX, webhookSecretKeyBase64, webhookSignedContent } from './webhook-signature';
export { ERROR_CODES, isErrorCode, isRetryable, statusOf, type ErrorCode } from './error-codes';
export { defineOperation, type AgentGuide, type InputOf, type Operation, type OutputOf, type Scope, type TokenKind } from './operation';
export { OPERATIONS, OP_NAMES, isOpName, type OpInput, type OpName, type OpOutput, type Operations, type StreamingOpName } from './registry';
export { MCP_ROUTE_NAMES, ROUTES, ROUTE_NAMES, type McpRouteName, type RouteInput, type RouteName, type RouteOutput, type Routes } from './route-registry';
export {
  ARTIFACT_KINDS,
  ArtifactInputSchema,
  ArtifactKindSchema,
  ArtifactSchema,
  OutputsSchema,
  type Artifact,
  type ArtifactInput,
  type ArtifactKind,
  type Outputs,
} from './schemas/artifact';
export {
  BUILTIN_CONNECTOR_IDS,
  BuiltinConnectorIdSchema,
  ConnectorIdSchema,
  ConnectorSchema,
  type BuiltinConnectorId,
  type Connector,
  type ConnectorId,
} from './schemas/connector';
export {
  BATCH_DEFAULT_CONCURRENCY,
  BATCH_LISTED_PROBLEMS,
  BATCH_MAX_BODY_ROWS,
  BATCH_MAX_CONCURRENCY,
  BATCH_MAX_ROWS,
  BATCH_ROW_STATUSES,
  BATCH_STATUSES,
  BatchEventSchema,
  BatchSchema,
  BatchRowSchema,
  type Batch,
  type BatchEvent,
  type BatchList,
  type BatchRow,
  type BatchRowStatus,
  type BatchStatus,
  type RowProblemBody,
} from './schemas/batch';
export {
  SCHEDULE_DEFAULT_CATCH_UP_SECONDS,
  SCHEDULE_MAX_CATCH_UP_SECONDS,
  SCHEDULE_NEXT_TICKS,
  SCHEDULE_RECENT_TICKS,
  SCHEDULE_STATUSES,
  SCHEDULE_TICK_STATUSES,
  ScheduleSchema,
  ScheduleTickSchema,
  type Schedule,
  type ScheduleList,
  type ScheduleStatus,
  type ScheduleTickBody,
  type ScheduleTickPage,
} from './schemas/schedule';
export { ErrorBodySchema, type ErrorBody } from './schemas/error-body';
export { NodeEstimateSchema, RunEstimateSchema, type RunEstimateBody } from './schemas/estimate';
export { NODE_KINDS, NodeSpecSchema, PortSchema, type NodeKind, type NodeSpec, type Port } from './schemas/node-spec';
export {
  RUN_LIST_DEFAULT_LIMIT,
  RUN_LIST_MAX_LIMIT,
  RUN_STATUSES,
  RunErrorSchema,
  RunEventsQuerySchema,
  RunListQuerySchema,
  RunListSchema,
  RunSchema,
  RunStatusSchema,
  RunSummarySchema,
  STEP_STATUSES,
  StepRecordSchema,
  UsageSchema,
  type Run,
  type RunError,
  type RunEventsQuery,
  type RunList,
  type RunListQuery,
  type RunStatus,
  type RunSummary,
  type StepRecord,
  type StepStatus,
  type Usage,
} from './schemas/run';
export {
  RunCompletedEventSchema,
  RunEventSchema,
  RunFailedEventSchema,
  RunStartedEventSchema,
  SequencedEventSchema,
  StepCompletedEventSchema,
  StepFailedEventSchema,
  StepProgressEventSchema,
  StepStartedEventSchema,
  TERMINAL_EVENT_TYPES,
  type RunEvent,
  type RunEventType,
  type SequencedEvent,
} from './schemas/run-event';
export { strictObject } from './schemas/strict-object';
export { MaxCostUsdSchema, SPEND_CAP_NOTE } from './schemas/max-cost';
export { GraphNodeSchema, PublishedWorkflowSchema, WorkflowSchema, type GraphNode, type PublishedWorkflow, type Workflow } from './schemas/workflow';
export {
  BumpSchema,
  DraftProblemSchema,
  EditorLayoutSchema,
  EditorLatestInputSchema,
  EditorPublishInputSchema,
  EditorWorkflowCreateInputSchema,
  EditorWorkflowListSchema,
  EditorWorkflowSchema,
  EditorWorkflowSummarySchema,
  EditorWorkflowUpdateInputSchema,
  SlugCheckSchema,
  WorkflowVersionDetailSchema,
  WorkflowVersionEntrySchema,
  WorkflowVersionListSchema,
  type Bump,
  type DraftProblem,
  type EditorLayout,
  type EditorLatestInput,
  type EditorPublishInput,
  type EditorWorkflow,
  type EditorWorkflowCreateInput,
  type EditorWorkflowList,
  type EditorWorkflowSummary,
  type EditorWorkflowUpdateInput,
  type SlugCheck,
  type WorkflowVersionDetail,
  type WorkflowVersionEntry,
  type WorkflowVersionList,
} from './schemas/editor-workflow';
export { describeErrors, MAX_LISTED, summarizeIssues, validate, validateInput, validatorFor, type ValidationIssue, type ValidationResult } from './validator';
export { ALL_ERRORS_VALUE_BUDGET, MAX_INPUT_DEPTH, MAX_MAP_ENTRIES, scanInput, type InputScan } from './input-limits';
export { buildOpenApiDocument, carriesBody } from './openapi';
export {
  MAX_TOKEN_DAYS,
  TokenCreatedSchema,
  TokenCreateInputSchema,
  TokenListSchema,
  TokenSummarySchema,
  type TokenCreatedBody,
  type TokenCreateInput,
  type TokenListBody,
  type TokenSummaryBody,
} from './schemas/token';
export {
  ConsentRequestBodySchema,
  ORG_ROLES,
  OrgRoleSchema,
  SessionBodySchema,
  SignInInputSchema,
  SwitchOrgInputSchema,
  type ConsentRequestBody,
  type OrgRole,
  type SessionBody,
  type SignInInput,
  type SwitchOrgInput,
} from './schemas/session';
