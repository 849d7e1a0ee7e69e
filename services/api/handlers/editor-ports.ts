import type {
  Artifact,
  DraftProblem,
  EditorLayout,
  EditorWorkflow,
  EditorWorkflowSummary,
  Workflow,
  WorkflowVersionDetail,
  WorkflowVersionEntry,
} from '../../contract';
import { formatSemver, validateWorkflow, type PublishedVersion, type PublishRequest, type Semver, type SpecLookup } from '../../engine';
import type { SlugStanding, WorkflowRecord, WorkflowVersionDetailRecord, WorkflowVersionRecord } from '../../store';

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
  createDraft(input: { orgId: string; name: string; draft: Workflow | null; layout?: EditorLayout }): Promise<WorkflowRecord>;
  updateDraft(id: string, orgId: string, changes: { name?: string; draft?: Workflow; layout?: EditorLayout }): Promise<WorkflowRecord | null>;
  findForOrg(id: string, orgId: string): Promise<WorkflowRecord | null>;
  listForOrg(orgId: string): Promise<WorkflowRecord[]>;
  listVersions(id: string, orgId: string): Promise<WorkflowVersionRecord[] | null>;
  /** Null when there is no such workflow; a missing version is a `not_found` AppError. */
  findVersion(id: string, orgId: string, version: Semver): Promise<WorkflowVersionDetailRecord | null>;
  /** Who holds a workflow slug in the organization, and whether it is retired. */
  slugStanding(orgId: string, slug: string): Promise<SlugStanding | null>;
  /** Refusals (no such workflow, no draft, a taken or retired slug, a missing bump) are `AppError`s. */
  publish(command: PublishRequest): Promise<PublishedVersion>;
  setLatest(id: string, orgId: string, version: Semver): Promise<WorkflowRecord | null>;
  delete(id: string, orgId: string): Promise<boolean>;
}

/** Port: a user's role in an organization, null when they are not a member (any more). */
export interface MemberRoles {
  find(orgId: string, userId: string): Promise<{ role: 'owner' | 'admin' | 'member' } | null>;
}

/**
 * Whether the draft has changes not yet published: its definition changed after the newest
 * publish, or, never published, it has nodes. A save of the same definition changes nothing.
 */
export function isDraftPending(workflow: WorkflowRecord): boolean {
  if (workflow.draft === null) return false;
  if (workflow.lastPublishedAt === null) return workflow.draft.nodes.length > 0;
  return workflow.draftChangedAt !== null && workflow.draftChangedAt.getTime() > workflow.lastPublishedAt.getTime();
}

export function summaryBody(workflow: WorkflowRecord): EditorWorkflowSummary {
  return {
    id: workflow.id,
    name: workflow.name,
    address: workflow.address,
    latest: workflow.latest ? { version: formatSemver(workflow.latest.version), sequence: workflow.latest.sequence } : null,
    createdAt: workflow.createdAt.toISOString(),
    updatedAt: workflow.updatedAt.toISOString(),
    lastPublishedAt: workflow.lastPublishedAt ? workflow.lastPublishedAt.toISOString() : null,
    draftPending: isDraftPending(workflow),
  };
}

/** What publishing the draft would refuse, by the engine's checks against the current catalog; paths relative to the definition. */
export function draftProblems(draft: Workflow | null, specs: SpecLookup): DraftProblem[] {
  if (draft === null) return [];
  const check = validateWorkflow(draft, specs);
  return check.ok ? [] : check.problems.map(({ path, message }) => ({ path, message }));
}

export function workflowBody(workflow: WorkflowRecord, specs: SpecLookup): EditorWorkflow {
  return { ...summaryBody(workflow), draft: workflow.draft, layout: workflow.layout, problems: draftProblems(workflow.draft, specs) };
}

export function versionBody(entry: WorkflowVersionRecord): WorkflowVersionEntry {
  return {
    version: formatSemver(entry.version),
    sequence: entry.sequence,
    createdAt: entry.createdAt.toISOString(),
    publishedBy: entry.publishedBy,
    latest: entry.latest,
    note: entry.note,
  };
}

export function versionDetailBody(entry: WorkflowVersionDetailRecord): WorkflowVersionDetail {
  return { ...versionBody(entry), definition: entry.definition, layout: entry.layout };
}
