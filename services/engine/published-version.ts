import type { Workflow } from '../contract';
import type { Semver } from './semver';

/**
 * A published workflow version, and the request that publishes one: the one declaration the
 * store (which keeps versions), the runs (which resolve `workflowRef`s and mounted workflows to
 * them) and the API (which answers and publishes them) share.
 */

/** One immutable published version of a workflow: what a `workflowRef` resolves to. */
export interface PublishedVersion {
  workflowId: string;
  versionId: string;
  /** `<org-slug>/<workflow-slug>`; null when the workflow has no slug. */
  address: string | null;
  version: Semver;
  /** Publication order within the workflow (1, 2, ...). */
  sequence: number;
  definition: Workflow;
}

/** What a publish asks for: the publisher's choice; the first publish may instead name its version. */
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
  /** The publisher's changelog note, kept with the version. */
  note?: string;
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
