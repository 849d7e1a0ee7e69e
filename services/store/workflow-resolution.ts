import type { Workflow } from '../contract/schemas/workflow';
import type { WorkflowRef } from '../engine/workflow-ref';
import { rawRows, type Db } from './prisma-client';
import type { PublishedVersion } from '../engine/published-version';

interface ResolvedRow {
  workflow_id: string;
  slug: string | null;
  org_slug: string;
  version_id: string;
  major: number;
  minor: number;
  patch: number;
  sequence: number;
  definition: Workflow;
}

/**
 * Finds the published version a reference names, in one statement (runs by `workflowRef` ask it
 * on their way in):
 *
 * - `latest`: the version the latest pointer names (rollbacks included);
 * - an exact version: that version, wherever the pointer is;
 * - a bare major: the highest version of that major not newer than the latest pointer, so that a
 *   rollback withdraws the versions after it from the moving selectors too (SPEC Versioning 7:
 *   "`@latest` and bare major move when versions are published or `@latest` is rolled back").
 *   Versions are only ever published above the highest, so "not newer" is "sequence at most the
 *   pointer's".
 *
 * A workflow never published has no pointer and resolves to nothing (drafts are the editor's).
 * A deleted workflow resolves nowhere, by address or by UUID (docs/workflows.md, "The latest
 * pointer, history and deletion"): `workflows.get` and runs agree.
 */
export async function findPublishedVersion(db: Db, ref: WorkflowRef): Promise<PublishedVersion | null> {
  const params: unknown[] = [];
  const param = (value: unknown, type: string): string => {
    params.push(value);
    return `$${params.length}::${type}`;
  };

  let where: string;
  if (ref.id.kind === 'uuid') {
    where = `w.id = ${param(ref.id.id, 'uuid')} AND w.deleted_at IS NULL`;
  } else {
    where = `o.slug = ${param(ref.id.org, 'text')} AND w.slug = ${param(ref.id.slug, 'text')} AND w.deleted_at IS NULL`;
  }

  let pick: string;
  switch (ref.selector.kind) {
    case 'latest':
      pick = 'v.id = w.latest_version_id';
      break;
    case 'exact': {
      const { major, minor, patch } = ref.selector.version;
      pick = `v.major = ${param(major, 'int')} AND v.minor = ${param(minor, 'int')} AND v.patch = ${param(patch, 'int')}`;
      break;
    }
    case 'major':
      pick = `v.major = ${param(ref.selector.major, 'int')} AND v.sequence <= lv.sequence`;
      break;
  }

  const rows = await rawRows<ResolvedRow>(
    db,
    `SELECT w.id AS workflow_id, w.slug, o.slug AS org_slug,
            v.id AS version_id, v.major, v.minor, v.patch, v.sequence, v.definition
       FROM workflows w
       JOIN organizations o ON o.id = w.org_id
       JOIN workflow_versions lv ON lv.id = w.latest_version_id
       JOIN LATERAL (
         SELECT v.id, v.major, v.minor, v.patch, v.sequence, v.definition
           FROM workflow_versions v
          WHERE v.workflow_id = w.id AND ${pick}
          ORDER BY v.sequence DESC
          LIMIT 1
       ) v ON true
      WHERE ${where}`,
    params,
  );
  const row = rows[0];
  if (!row) return null;
  return {
    workflowId: row.workflow_id,
    versionId: row.version_id,
    address: row.slug === null ? null : `${row.org_slug}/${row.slug}`,
    version: { major: row.major, minor: row.minor, patch: row.patch },
    sequence: row.sequence,
    definition: row.definition,
  };
}
