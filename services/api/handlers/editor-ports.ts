import type { Artifact, EditorWorkflow, EditorWorkflowSummary, Workflow, WorkflowVersionEntry } from '../../contract';
import { formatSemver, type PublishedVersion, type PublishRequest, type Semver } from '../../engine';
import type { WorkflowRecord, WorkflowVersionRecord } from '../../store';

/**
 * The ports of the web editor's workflow routes and the views of their answers, over the store's
 * own records. The store's `WorkflowRepository` and `MembershipRepository` satisfy the ports.
 */

/** Port: a workflow's recipe assets (the nodes' `WorkflowAssets` satisfies it). */
export interface WorkflowAssetHost {
  /** Stores an uploaded file as an asset of the workflow; answers a ref artifact for its definition. */
  upload(workflowId: string, bytes: Buffer, mimeType: string): Promise<Artifact>;
  /** Copies every ref of `definition` into the workflow's assets; maps each ref to its copy. */
  host(workflowId: string, definition: Workflow): Promise<Map<string, Artifact>>;
}

/** Port: the organization's workflows. Lookups find only live (not deleted) workflows of `orgId`. */
export interface EditorWorkflowStore {
  createDraft(input: { orgId: string; name: string; draft: Workflow | null }): Promise<WorkflowRecord>;
  updateDraft(id: string, orgId: string, changes: { name?: string; draft?: Workflow }): Promise<WorkflowRecord | null>;
  findForOrg(id: string, orgId: string): Promise<WorkflowRecord | null>;
  listForOrg(orgId: string): Promise<WorkflowRecord[]>;
  listVersions(id: string, orgId: string): Promise<WorkflowVersionRecord[] | null>;
  /** Refusals (no such workflow, no draft, a taken or retired slug, a missing bump) are `AppError`s. */
  publish(command: PublishRequest): Promise<PublishedVersion>;
  setLatest(id: string, orgId: string, version: Semver): Promise<WorkflowRecord | null>;
  delete(id: string, orgId: string): Promise<boolean>;
}

/** Port: a user's role in an organization, null when they are not a member (any more). */
export interface MemberRoles {
  find(orgId: string, userId: string): Promise<{ role: 'owner' | 'admin' | 'member' } | null>;
}

export function summaryBody(workflow: WorkflowRecord): EditorWorkflowSummary {
  return {
    id: workflow.id,
    name: workflow.name,
    address: workflow.address,
    latest: workflow.latest ? { version: formatSemver(workflow.latest.version), sequence: workflow.latest.sequence } : null,
    createdAt: workflow.createdAt.toISOString(),
    updatedAt: workflow.updatedAt.toISOString(),
  };
}

export function workflowBody(workflow: WorkflowRecord): EditorWorkflow {
  return { ...summaryBody(workflow), draft: workflow.draft };
}

export function versionBody(entry: WorkflowVersionRecord): WorkflowVersionEntry {
  return { version: formatSemver(entry.version), sequence: entry.sequence, createdAt: entry.createdAt.toISOString(), publishedBy: entry.publishedBy, latest: entry.latest };
}
