import type { EditorLayout } from '../contract/schemas/editor-workflow';
import type { Workflow } from '../contract/schemas/workflow';
import type { Semver } from '../engine/semver';
import type { WorkflowRef } from '../engine/workflow-ref';
import { AppError } from '../platform/app-error';
import type { Prisma } from './prisma-generated';
import type { Db } from './prisma-client';
import { publishDraft } from './workflow-publish';
import type { PublishedVersion, PublishRequest } from '../engine/published-version';
import type { SlugStanding, WorkflowRecord, WorkflowVersionDetailRecord, WorkflowVersionRecord } from './workflow-records';
import { findPublishedVersion } from './workflow-resolution';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How long a publish may wait for a connection and then run: concurrent publishes of one workflow take turns. */
const TRANSACTION_OPTIONS = { maxWait: 10_000, timeout: 20_000 };

const RECORD_INCLUDE = {
  org: { select: { slug: true } },
  latestVersion: { select: { id: true, major: true, minor: true, patch: true, sequence: true } },
} as const;

type WorkflowRow = Prisma.WorkflowGetPayload<{ include: typeof RECORD_INCLUDE }>;

const VERSION_SELECT = {
  id: true,
  major: true,
  minor: true,
  patch: true,
  sequence: true,
  createdAt: true,
  note: true,
  publishedBy: { select: { id: true, name: true } },
} as const;

type VersionRow = Prisma.WorkflowVersionGetPayload<{ select: typeof VERSION_SELECT }>;

function toVersionRecord(row: VersionRow, latestVersionId: string | undefined): WorkflowVersionRecord {
  return {
    id: row.id,
    version: { major: row.major, minor: row.minor, patch: row.patch },
    sequence: row.sequence,
    createdAt: row.createdAt,
    publishedBy: row.publishedBy,
    latest: row.id === latestVersionId,
    note: row.note,
  };
}

/** When each workflow's newest version was published (one query for them all). */
async function publishTimes(db: Db, ids: string[]): Promise<Map<string, Date>> {
  if (ids.length === 0) return new Map();
  const groups = await db.workflowVersion.groupBy({ by: ['workflowId'], where: { workflowId: { in: ids } }, _max: { createdAt: true } });
  return new Map(groups.flatMap((g) => (g._max.createdAt ? [[g.workflowId, g._max.createdAt] as const] : [])));
}

/** Workflow rows as records, with their last publish times. */
async function toRecords(db: Db, rows: WorkflowRow[]): Promise<WorkflowRecord[]> {
  const times = await publishTimes(db, rows.filter((row) => row.latestVersionId !== null).map((row) => row.id));
  return rows.map((row) => toRecord(row, times.get(row.id) ?? null));
}

function toRecord(row: WorkflowRow, lastPublishedAt: Date | null): WorkflowRecord {
  const v = row.latestVersion;
  return {
    id: row.id,
    orgId: row.orgId,
    name: row.name,
    slug: row.slug,
    address: row.slug === null ? null : `${row.org.slug}/${row.slug}`,
    draft: (row.draft ?? null) as unknown as Workflow | null,
    layout: (row.draftLayout ?? null) as unknown as EditorLayout | null,
    draftChangedAt: row.draftChangedAt,
    lastPublishedAt,
    latest: v ? { versionId: v.id, version: { major: v.major, minor: v.minor, patch: v.patch }, sequence: v.sequence } : null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

function json(value: Workflow | EditorLayout): Prisma.InputJsonValue {
  return value as unknown as Prisma.InputJsonValue;
}

/** The live (not deleted) workflow `id` of `orgId`: the condition of every editor lookup. */
function live(id: string, orgId: string) {
  return { id, orgId, deletedAt: null };
}

/**
 * Workflows and their published versions: the editor's drafts, publishing, history, the latest
 * pointer and deletion, and the resolution of references (`workflows.get`, runs by
 * `workflowRef`). Published versions are never changed or deleted here. Ids that are not UUIDs
 * find nothing. Rules of names and versions are the engine's (docs/workflows.md).
 */
export class WorkflowRepository {
  constructor(private readonly db: Db) {}

  private transaction<T>(work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
    return '$transaction' in this.db ? this.db.$transaction(work, TRANSACTION_OPTIONS) : work(this.db);
  }

  /** A new workflow with its draft and layout; no address and no versions until its first publish. */
  async createDraft(input: { orgId: string; name: string; draft: Workflow | null; layout?: EditorLayout }): Promise<WorkflowRecord> {
    const row = await this.db.workflow.create({
      data: {
        orgId: input.orgId,
        name: input.name,
        ...(input.draft ? { draft: json(input.draft), draftChangedAt: new Date() } : {}),
        ...(input.layout ? { draftLayout: json(input.layout) } : {}),
      },
      include: RECORD_INCLUDE,
    });
    return toRecord(row, null);
  }

  /**
   * Renames the workflow and/or replaces its draft or layout; null when `orgId` has no such live
   * workflow. `draftChangedAt` moves only when the definition saved differs from the draft (an
   * editor's autosave of the same draft leaves nothing pending); it is read at the row's update,
   * after any publish that held the row, so it is later than that publish.
   */
  async updateDraft(id: string, orgId: string, changes: { name?: string; draft?: Workflow; layout?: EditorLayout }): Promise<WorkflowRecord | null> {
    if (!UUID.test(id)) return null;
    const draft = changes.draft === undefined ? null : JSON.stringify(changes.draft);
    const layout = changes.layout === undefined ? null : JSON.stringify(changes.layout);
    const updated = await this.db.$executeRaw`
      UPDATE workflows
         SET name = COALESCE(${changes.name ?? null}::text, name),
             draft = COALESCE(${draft}::jsonb, draft),
             draft_changed_at = CASE WHEN ${draft}::jsonb IS NOT NULL AND draft IS DISTINCT FROM ${draft}::jsonb
                                     THEN clock_timestamp() ELSE draft_changed_at END,
             draft_layout = COALESCE(${layout}::jsonb, draft_layout),
             updated_at = clock_timestamp()
       WHERE id = ${id}::uuid AND org_id = ${orgId}::uuid AND deleted_at IS NULL`;
    return updated === 0 ? null : this.findForOrg(id, orgId);
  }

  /** The live workflow `id` of `orgId`, with its draft. */
  async findForOrg(id: string, orgId: string): Promise<WorkflowRecord | null> {
    if (!UUID.test(id)) return null;
    const row = await this.db.workflow.findFirst({ where: live(id, orgId), include: RECORD_INCLUDE });
    return row ? (await toRecords(this.db, [row]))[0]! : null;
  }

  /** The organization's live workflows, most recently changed first. */
  async listForOrg(orgId: string): Promise<WorkflowRecord[]> {
    const rows = await this.db.workflow.findMany({
      where: { orgId, deletedAt: null },
      include: RECORD_INCLUDE,
      orderBy: [{ updatedAt: 'desc' }, { id: 'desc' }],
    });
    return toRecords(this.db, rows);
  }

  /** Every published version of the live workflow, newest (highest sequence) first; null when there is no such workflow. */
  async listVersions(id: string, orgId: string): Promise<WorkflowVersionRecord[] | null> {
    const workflow = await this.findForOrg(id, orgId);
    if (!workflow) return null;
    const rows = await this.db.workflowVersion.findMany({ where: { workflowId: id }, orderBy: { sequence: 'desc' }, select: VERSION_SELECT });
    return rows.map((row) => toVersionRecord(row, workflow.latest?.versionId));
  }

  /**
   * One published version of the live workflow with its definition and layout; null when there
   * is no such workflow, `not_found` when it has no such version.
   */
  async findVersion(id: string, orgId: string, version: Semver): Promise<WorkflowVersionDetailRecord | null> {
    const workflow = await this.findForOrg(id, orgId);
    if (!workflow) return null;
    const row = await this.db.workflowVersion.findUnique({
      where: { workflowId_major_minor_patch: { workflowId: id, ...version } },
      select: { ...VERSION_SELECT, definition: true, layout: true },
    });
    if (!row) {
      throw new AppError({ code: 'not_found', message: `this workflow has no published version ${version.major}.${version.minor}.${version.patch}; list them with GET /editor/workflows/${id}/versions` });
    }
    return {
      ...toVersionRecord(row, workflow.latest?.versionId),
      definition: row.definition as unknown as Workflow,
      layout: (row.layout ?? null) as unknown as EditorLayout | null,
    };
  }

  /**
   * Who holds the workflow slug in the organization (a deleted workflow keeps its slug) and
   * whether it is retired; the rules that follow are the caller's. Null when there is no such organization.
   */
  async slugStanding(orgId: string, slug: string): Promise<SlugStanding | null> {
    const [org, holder, retired] = await Promise.all([
      this.db.organization.findUnique({ where: { id: orgId }, select: { slug: true } }),
      this.db.workflow.findFirst({ where: { orgId, slug }, select: { id: true, name: true, deletedAt: true } }),
      this.db.retiredSlug.findUnique({ where: { orgId_slug: { orgId, slug } }, select: { slug: true } }),
    ]);
    if (!org) return null;
    return {
      orgSlug: org.slug,
      holder: holder ? { id: holder.id, name: holder.name, deleted: holder.deletedAt !== null } : null,
      retired: retired !== null,
    };
  }

  /** Publishes the draft as a new version (see `publishDraft`); refusals are `AppError`s. */
  async publish(request: PublishRequest): Promise<PublishedVersion> {
    if (!UUID.test(request.workflowId)) throw new AppError({ code: 'not_found', message: `no workflow with id "${request.workflowId}" in your organization` });
    return this.transaction((tx) => publishDraft(tx, request));
  }

  /**
   * Points `latest` at the published `version` (a rollback, or forward again); nothing is
   * deleted and later publishes still continue from the highest version. Null when there is no
   * such live workflow; `not_found` when it has no such version.
   */
  async setLatest(id: string, orgId: string, version: Semver): Promise<WorkflowRecord | null> {
    if (!UUID.test(id)) return null;
    return this.transaction(async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`
        SELECT id FROM workflows WHERE id = ${id}::uuid AND org_id = ${orgId}::uuid AND deleted_at IS NULL FOR UPDATE`;
      if (locked.length === 0) return null;
      const target = await tx.workflowVersion.findUnique({ where: { workflowId_major_minor_patch: { workflowId: id, ...version } }, select: { id: true } });
      if (!target) {
        throw new AppError({ code: 'not_found', message: `this workflow has no published version ${version.major}.${version.minor}.${version.patch}; list them with GET /editor/workflows/${id}/versions` });
      }
      const row = await tx.workflow.update({ where: { id }, data: { latestVersionId: target.id }, include: RECORD_INCLUDE });
      return (await toRecords(tx, [row]))[0]!;
    });
  }

  /**
   * Deletes the live workflow: it disappears from the editor and its address stops resolving; its
   * slug is retired in the organization for good. The row and its versions stay, so runs that ran
   * it keep their records (`runs.workflow_id`, the definition they ran); no reference resolves
   * to it any more, its UUID included. False when there is no such live workflow.
   */
  async delete(id: string, orgId: string): Promise<boolean> {
    if (!UUID.test(id)) return false;
    return this.transaction(async (tx) => {
      const locked = await tx.$queryRaw<{ slug: string | null }[]>`
        SELECT slug FROM workflows WHERE id = ${id}::uuid AND org_id = ${orgId}::uuid AND deleted_at IS NULL FOR UPDATE`;
      if (locked.length === 0) return false;
      await tx.workflow.update({ where: { id }, data: { deletedAt: new Date() } });
      // Its recipe assets (nodes' workflowAssetPrefix) expire now: the retention sweeper deletes
      // their blobs; the blob route refuses them from this commit on.
      await tx.$executeRaw`
        UPDATE artifacts SET expires_at = now()
         WHERE run_id IS NULL AND expires_at IS NULL AND deleted_at IS NULL AND blob_key LIKE ${`workflows/${id}/assets/%`}`;
      const slug = locked[0]!.slug;
      if (slug !== null) await tx.retiredSlug.createMany({ data: [{ orgId, slug }], skipDuplicates: true });
      return true;
    });
  }

  /** Whether a live (not deleted) workflow has this id, in any organization: its assets are served while it is. */
  async isLive(id: string): Promise<boolean> {
    if (!UUID.test(id)) return false;
    return (await this.db.workflow.count({ where: { id, deletedAt: null } })) > 0;
  }

  /**
   * The published version a reference names, for any caller (publishing is sharing; see
   * docs/workflows.md). A deleted workflow is found by no reference, its UUID included.
   */
  findPublished(ref: WorkflowRef): Promise<PublishedVersion | null> {
    return findPublishedVersion(this.db, ref);
  }

  /**
   * The `WorkflowResolver` of runs: the version a `workflowRef` runs, never a deleted workflow's.
   * Any organization's published workflow runs; the run is charged to the caller's (`_orgId`).
   */
  resolve(ref: WorkflowRef, _orgId: string): Promise<PublishedVersion | null> {
    return findPublishedVersion(this.db, ref);
  }
}
