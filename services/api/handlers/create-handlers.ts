import type { NodeCatalog } from '../../nodes';
import type { CostSources, RunLauncher } from '../../runs';
import { accountHandlers, type AccountHandlerDeps } from './account-handlers';
import { batchHandlers, type BatchHandlerDeps } from './batch-handlers';
import { catalogHandlers } from './catalog-handlers';
import { deviceApprovalHandlers, type DeviceApprovalDeps } from './device-approval-handlers';
import { editorHandlers, type EditorHandlerDeps } from './editor-handlers';
import type { Handlers } from './handler-types';
import { queueHandlers, type QueueHandlerDeps } from './queue-handlers';
import { runHandlers } from './run-handlers';
import { runRecordHandlers, type RunRecordHandlerDeps } from './run-record-handlers';
import { scheduleHandlers, type ScheduleHandlerDeps } from './schedule-handlers';
import { uploadHandlers, type UploadHandlerDeps } from './upload-handlers';
import { webhookHandlers, type WebhookHandlerDeps } from './webhook-handlers';
import { workflowHandlers, type WorkflowHandlerDeps } from './workflow-handlers';

export interface HandlerDeps {
  catalog: NodeCatalog;
  workflows: WorkflowHandlerDeps;
  runs: RunLauncher;
  costs: CostSources;
  runRecords: RunRecordHandlerDeps;
  account: AccountHandlerDeps;
  editor: EditorHandlerDeps;
  deviceApproval: DeviceApprovalDeps;
  uploads: UploadHandlerDeps;
  webhooks: WebhookHandlerDeps;
  queue: QueueHandlerDeps;
  batches: BatchHandlerDeps;
  schedules: ScheduleHandlerDeps;
  /** What is wrong with a Webhook-Url by the address rules, before any run starts; null when nothing. */
  webhookUrlProblem(url: string): string | null;
}

/** The handler of every operation and route `invoke` serves. */
export function createHandlers(deps: HandlerDeps): Handlers {
  return {
    ...catalogHandlers(deps.catalog),
    ...workflowHandlers(deps.workflows),
    ...runHandlers(deps.runs, deps.editor, deps.costs, deps.webhookUrlProblem),
    ...runRecordHandlers(deps.runRecords),
    ...accountHandlers(deps.account),
    ...editorHandlers(deps.editor),
    ...deviceApprovalHandlers(deps.deviceApproval),
    ...uploadHandlers(deps.uploads),
    ...webhookHandlers(deps.webhooks),
    ...queueHandlers(deps.queue),
    ...batchHandlers(deps.batches),
    ...scheduleHandlers(deps.schedules),
  };
}
