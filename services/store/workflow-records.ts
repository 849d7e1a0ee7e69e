import type { EditorLayout } from '../contract/schemas/editor-workflow';
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
  /** The canvas positions of the draft's nodes; null when none were saved. */
  layout: EditorLayout | null;
  /** When the draft's definition last changed; a publish sets it to the version's time. Null for a workflow without a draft. */
  draftChangedAt: Date | null;
  /** When the newest version was published; null until the first publish. */
  lastPublishedAt: Date | null;
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
  /** The publisher's changelog note; null when none was given. */
  note: string | null;
}

/** One published version with what it publishes. */
export interface WorkflowVersionDetailRecord extends WorkflowVersionRecord {
  definition: Workflow;
  /** The draft's canvas layout at publish; null when it had none. */
  layout: EditorLayout | null;
}

/** Whether a first publish in an organization could claim a workflow slug. */
export interface SlugStanding {
  /** The organization's slug: the address would be `<orgSlug>/<slug>`. */
  orgSlug: string;
  /** The workflow that holds the slug (a deleted one keeps it), if any. */
  holder: { id: string; name: string; deleted: boolean } | null;
  /** Whether a deleted workflow retired it. */
  retired: boolean;
}
