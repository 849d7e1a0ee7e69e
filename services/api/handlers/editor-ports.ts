import type { Artifact, EditorWorkflow, EditorWorkflowSummary, Workflow, WorkflowVersionEntry } from '../../contract';
import { formatSemver, type PublishedVersion, type PublishRequest, type Semver } from '../../engine';

/**
 * The ports of the web editor's workflow routes and the views of their answers. The store's
 * `WorkflowRepository` and `MembershipRepository` satisfy the ports as they are.
 */

/** A workflow as the store keeps it. */
export interface StoredWorkflow {
  id: string;
  name: string;
  address: string | null;
  draft: Workflow | null;
  latest: { version: Semver; sequence: number } | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One published version in a workflow's history. */
export interface StoredWorkflowVersion {
  version: Semver;
  sequence: number;
  createdAt: Date;
  publishedBy: { id: string; name: string } | null;
  latest: boolean;
}

/** Port: a workflow's recipe assets (the nodes' `WorkflowAssets` satisfies it). */
export interface WorkflowAssetHost {
  /** Stores an uploaded file as an asset of the workflow; answers a ref artifact for its definition. */
  upload(workflowId: string, bytes: Buffer, mimeType: string): Promise<Artifact>;
  /** Copies every ref of `definition` into the workflow's assets; maps each ref to its copy. */
  host(workflowId: string, definition: Workflow): Promise<Map<string, Artifact>>;
}

/** Port: the organization's workflows. Lookups find only live (not deleted) workflows of `orgId`. */
export interface EditorWorkflowStore {
  createDraft(input: { orgId: string; name: string; draft: Workflow | null }): Promise<StoredWorkflow>;
  updateDraft(id: string, orgId: string, changes: { name?: string; draft?: Workflow }): Promise<StoredWorkflow | null>;
  findForOrg(id: string, orgId: string): Promise<StoredWorkflow | null>;
  listForOrg(orgId: string): Promise<StoredWorkflow[]>;
  listVersions(id: string, orgId: string): Promise<StoredWorkflowVersion[] | null>;
  /** Refusals (no such workflow, no draft, a taken or retired slug, a missing bump) are `AppError`s. */
  publish(command: PublishRequest): Promise<PublishedVersion>;
  setLatest(id: string, orgId: string, version: Semver): Promise<StoredWorkflow | null>;
  delete(id: string, orgId: string): Promise<boolean>;
}

/** Port: a user's role in an organization, null when they are not a member (any more). */
export interface MemberRoles {
  find(orgId: string, userId: string): Promise<{ role: 'owner' | 'admin' | 'member' } | null>;
}

export function summaryBody(workflow: StoredWorkflow): EditorWorkflowSummary {
  return {
    id: workflow.id,
    name: workflow.name,
    address: workflow.address,
    latest: workflow.latest ? { version: formatSemver(workflow.latest.version), sequence: workflow.latest.sequence } : null,
    createdAt: workflow.createdAt.toISOString(),
    updatedAt: workflow.updatedAt.toISOString(),
  };
}

export function workflowBody(workflow: StoredWorkflow): EditorWorkflow {
  return { ...summaryBody(workflow), draft: workflow.draft };
}

export function versionBody(entry: StoredWorkflowVersion): WorkflowVersionEntry {
  return { version: formatSemver(entry.version), sequence: entry.sequence, createdAt: entry.createdAt.toISOString(), publishedBy: entry.publishedBy, latest: entry.latest };
}
