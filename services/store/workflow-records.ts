import type { Workflow } from '../contract/schemas/workflow';
import type { Semver } from '../engine/semver';

/**
 * The workflow store's domain objects: a workflow (draft, name, address, latest pointer) and its
 * immutable published versions, as Postgres holds them.
 */

/** The version the latest pointer names. */
export interface LatestPointer {
  versionId: string;
  version: Semver;
  sequence: number;
}

/** A workflow as the editor sees it. */
export interface WorkflowRecord {
  id: string;
  orgId: string;
  name: string;
  /** Claimed by the first publish; null until then. */
  slug: string | null;
  /** `<org-slug>/<workflow-slug>`; null until the slug is claimed. */
  address: string | null;
  /** The unpublished working copy. */
  draft: Workflow | null;
  latest: LatestPointer | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One published version in a workflow's history. */
export interface WorkflowVersionRecord {
  id: string;
  version: Semver;
  sequence: number;
  createdAt: Date;
  /** Null when the publisher's account was deleted. */
  publishedBy: { id: string; name: string } | null;
  /** Whether the latest pointer names it. */
  latest: boolean;
}

/** A published version a reference resolved to. Its fields satisfy the API's `ResolvedWorkflow`. */
export interface PublishedVersionRecord {
  workflowId: string;
  versionId: string;
  address: string | null;
  version: Semver;
  sequence: number;
  definition: Workflow;
}

/** What a publish raises: the publisher's choice; the first publish may instead name its version. */
export interface PublishRequest {
  workflowId: string;
  orgId: string;
  /** The publisher (a user of the organization). */
  userId: string;
  bump?: 'major' | 'minor' | 'patch';
  /** First publish only: its version (default 1.0.0). */
  initialVersion?: Semver;
  /** The workflow slug (kebab-case, checked by the caller) the first publish claims. */
  slug?: string;
  /**
   * Checks the draft about to be published (the engine's validation against the node catalog);
   * throws to refuse. Called inside the publish transaction, on the draft it publishes.
   */
  check(definition: Workflow): void;
  /**
   * The definition as it is published (and kept as the draft): its refs pointing at the
   * workflow's recipe assets (docs/workflows.md, "Recipe assets"); throws to refuse.
   */
  rewrite(definition: Workflow): Workflow;
}
