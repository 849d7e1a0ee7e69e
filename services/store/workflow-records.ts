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
