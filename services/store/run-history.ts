import type { RunError, RunStatus } from '../contract/schemas/run';
import { queryRows, type SqlPool } from './hot-sql';
import type { Db } from './prisma-client';
import { isUuid, parseRunError, parseRunStatus, parseStepStatus, type RunRecord, type RunStepRecord, type WebhookDeliveryRecord } from './run-records';
import { microsFromDb } from './micros';

/**
 * Run reads: one run with its steps (`readRunRecord`), and the run history, an organization's
 * runs, newest first, a page at a time. Pages are cut by keyset
 * over (created_at DESC, id DESC), served by the index runs(org_id, created_at DESC): a page
 * starts strictly after the last run of the previous one, so rows inserted meanwhile (newer, at
 * the front) never shift later pages into duplicates or gaps.
 */

/** Where a page of the listing ends: the position of its last run. */
export interface RunListKey {
  createdAt: Date;
  id: string;
}

/** What {@link listRunSummaries} lists. */
export interface RunListOptions {
  /** Page size, 1 or more. */
  limit: number;
  /** Start after this run (the previous page's `next`); omitted: the newest run first. */
  after?: RunListKey;
  /** Only runs with this status. */
  status?: RunStatus;
  /**
   * Only runs of the workflow (any version, and its editor draft runs): at this address (a
   * deleted workflow's included), or with this id.
   */
  workflow?: { org: string; slug: string } | { id: string };
  /** Only the runs of this batch's rows. */
  batchId?: string;
  /** Only the runs this schedule's ticks started. */
  scheduleId?: string;
}

/** A run without its steps, definition, inputs and outputs. */
export interface RunSummaryRecord {
  id: string;
  status: RunStatus;
  /** `<org-slug>/<workflow-slug>@<version>` of the published version run; null for an inline definition. */
  workflowRef: string | null;
  /** The workflow the run belongs to (a published version's, or the editor draft's); null for a plain inline definition. */
  workflowId: string | null;
  /** That workflow's name; null with `workflowId`. */
  workflowName: string | null;
  batchId: string | null;
  scheduleId: string | null;
  error: RunError | null;
  capMicros: number;
  spentMicros: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** One page: its runs and the key to continue from, null when there is nothing older. */
export interface RunListPage {
  runs: RunSummaryRecord[];
  next: RunListKey | null;
}

/** `<org-slug>/<workflow-slug>@<version>` of a run's published version; null for an inline definition. */
function versionRef(v: { major: number; minor: number; patch: number; workflow: { slug: string | null; org: { slug: string } } } | null): string | null {
  return v && v.workflow.slug !== null ? `${v.workflow.org.slug}/${v.workflow.slug}@${v.major}.${v.minor}.${v.patch}` : null;
}

/** The page of `orgId`'s runs described by `options`. */
export async function listRunSummaries(db: Db, orgId: string, options: RunListOptions): Promise<RunListPage> {
  const { limit, after, status } = options;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  if (!isUuid(orgId) || (after && !isUuid(after.id))) return { runs: [], next: null };
  if ((options.batchId !== undefined && !isUuid(options.batchId)) || (options.scheduleId !== undefined && !isUuid(options.scheduleId))) return { runs: [], next: null };
  let workflowId: string | undefined;
  if (options.workflow && 'id' in options.workflow) {
    if (!isUuid(options.workflow.id)) return { runs: [], next: null };
    workflowId = options.workflow.id;
  } else if (options.workflow) {
    // A slug is never reused in its organization, so the address names one workflow for good.
    const workflow = await db.workflow.findFirst({ where: { slug: options.workflow.slug, org: { slug: options.workflow.org } }, select: { id: true } });
    if (!workflow) return { runs: [], next: null };
    workflowId = workflow.id;
  }
  const rows = await db.run.findMany({
    where: {
      orgId,
      ...(status ? { status } : {}),
      // Served by the index runs(org_id, workflow_id, created_at DESC).
      ...(workflowId ? { workflowId } : {}),
      // Served by the partial indexes on runs(batch_id) and runs(schedule_id, created_at DESC).
      ...(options.batchId ? { batchId: options.batchId } : {}),
      ...(options.scheduleId ? { scheduleId: options.scheduleId } : {}),
      // (created_at, id) < (after.createdAt, after.id), with the created_at bound spelled out
      // so that it becomes a range condition on the index.
      ...(after ? { createdAt: { lte: after.createdAt }, OR: [{ createdAt: { lt: after.createdAt } }, { id: { lt: after.id } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    // One more than asked tells whether another page follows without a second query.
    take: limit + 1,
    select: {
      id: true,
      status: true,
      error: true,
      capMicros: true,
      spentMicros: true,
      createdAt: true,
      startedAt: true,
      finishedAt: true,
      workflowId: true,
      batchId: true,
      scheduleId: true,
      workflow: { select: { name: true } },
      workflowVersion: { select: { major: true, minor: true, patch: true, workflow: { select: { slug: true, org: { select: { slug: true } } } } } },
    },
  });
  const runs = rows.slice(0, limit).map(
    (row): RunSummaryRecord => ({
      id: row.id,
      status: parseRunStatus(row.status, row.id),
      workflowRef: versionRef(row.workflowVersion),
      workflowId: row.workflowId,
      workflowName: row.workflow?.name ?? null,
      batchId: row.batchId,
      scheduleId: row.scheduleId,
      error: parseRunError(row.error),
      capMicros: microsFromDb(row.capMicros),
      spentMicros: microsFromDb(row.spentMicros),
      createdAt: row.createdAt,
      startedAt: row.startedAt,
      finishedAt: row.finishedAt,
    }),
  );
  const last = runs[runs.length - 1];
  return { runs, next: rows.length > limit && last ? { createdAt: last.createdAt, id: last.id } : null };
}

interface RunRecordRow {
  id: string;
  org_id: string;
  user_id: string;
  token_id: string | null;
  workflow_id: string | null;
  workflow_version_id: string | null;
  workflow_ref: string | null;
  workflow_name: string | null;
  batch_id: string | null;
  schedule_id: string | null;
  status: string;
  definition: unknown;
  inputs: unknown;
  outputs: Record<string, unknown> | null;
  error: unknown;
  cap_micros: string;
  spent_micros: string;
  reserved_micros: string;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  deadline_at: Date | null;
  /** The run's webhook with its deliveries (times as ISO text), or null. */
  webhook: {
    url: string;
    events: string[];
    deliveries: { seq: number; type: string; status: string; attempts: number; lastStatusCode: number | null; lastError: string | null; firstAttemptAt: string; lastAttemptAt: string | null; nextAttemptAt: string | null; deliveredAt: string | null }[];
  } | null;
  /** json_agg of the steps; money as text, times as ISO text (JSON has neither bigint nor dates). */
  steps: {
    nodeId: string;
    status: string;
    attempt: number;
    pendingDeps: number;
    costMicros: string;
    reservedMicros: string;
    ms: number | null;
    error: unknown;
    startedAt: string | null;
    finishedAt: string | null;
  }[];
}

// One statement, so one snapshot: the run's spent and reserved amounts agree with its steps
// even while they settle, without an interactive transaction. A read path must not hold a
// pooled connection across round trips (or wait for Prisma's transaction slot, which gives up
// after 2 s under a burst of streams).
const RUN_RECORD_SQL = `
SELECT r.id, r.org_id, r.user_id, r.token_id, r.workflow_id, r.workflow_version_id, r.status,
       r.definition, r.inputs, r.outputs, r.error, r.cap_micros, r.spent_micros, r.reserved_micros,
       r.created_at, r.started_at, r.finished_at, r.deadline_at, r.batch_id, r.schedule_id,
       (SELECT o.slug || '/' || w.slug || '@' || v.major || '.' || v.minor || '.' || v.patch
          FROM workflow_versions v JOIN workflows w ON w.id = v.workflow_id JOIN organizations o ON o.id = w.org_id
         WHERE v.id = r.workflow_version_id) AS workflow_ref,
       (SELECT w.name FROM workflows w WHERE w.id = r.workflow_id) AS workflow_name,
       (SELECT json_build_object('url', h.url, 'events', h.events, 'deliveries', COALESCE((
                 SELECT json_agg(json_build_object('seq', d.seq, 'type', d.event_type, 'status', d.status, 'attempts', d.attempts,
                          'lastStatusCode', d.last_status_code, 'lastError', d.last_error, 'firstAttemptAt', d.first_attempt_at,
                          'lastAttemptAt', d.last_attempt_at, 'nextAttemptAt', d.next_attempt_at, 'deliveredAt', d.delivered_at) ORDER BY d.seq)
                   FROM webhook_deliveries d WHERE d.run_id = r.id), '[]'::json))
          FROM run_webhooks h WHERE h.run_id = r.id) AS webhook,
       COALESCE((
         SELECT json_agg(json_build_object(
                  'nodeId', s.node_id, 'status', s.status, 'attempt', s.attempt, 'pendingDeps', s.pending_deps,
                  'costMicros', s.cost_micros::text, 'reservedMicros', s.reserved_micros::text, 'ms', s.ms,
                  'error', s.error, 'startedAt', s.started_at, 'finishedAt', s.finished_at)
                ORDER BY s.started_at ASC NULLS LAST, s.node_id ASC)
           FROM steps s WHERE s.run_id = r.id), '[]'::json) AS steps
  FROM runs r
 WHERE r.id = $1::uuid AND ($2::uuid IS NULL OR r.org_id = $2::uuid)`;

const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));

/**
 * The run with its steps (ordered by start, unstarted ones last), or null when there is none.
 * With `orgId`, another organization's run is null too: the caller answers 404 either way.
 */
export async function readRunRecord(pool: SqlPool, runId: string, orgId?: string): Promise<RunRecord | null> {
  if (!isUuid(runId) || (orgId !== undefined && !isUuid(orgId))) return null;
  const [row] = await queryRows<RunRecordRow>(pool, RUN_RECORD_SQL, [runId, orgId ?? null]);
  if (!row) return null;
  return {
    id: row.id,
    orgId: row.org_id,
    userId: row.user_id,
    tokenId: row.token_id,
    workflowId: row.workflow_id,
    workflowVersionId: row.workflow_version_id,
    workflowRef: row.workflow_ref,
    workflowName: row.workflow_name,
    batchId: row.batch_id,
    scheduleId: row.schedule_id,
    status: parseRunStatus(row.status, row.id),
    definition: row.definition,
    inputs: row.inputs,
    outputs: row.outputs ?? null,
    error: parseRunError(row.error),
    capMicros: microsFromDb(row.cap_micros),
    spentMicros: microsFromDb(row.spent_micros),
    reservedMicros: microsFromDb(row.reserved_micros),
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    deadlineAt: row.deadline_at,
    webhook: row.webhook && {
      url: row.webhook.url,
      events: row.webhook.events,
      deliveries: row.webhook.deliveries.map((d) => ({
        seq: d.seq,
        eventType: d.type,
        status: d.status as WebhookDeliveryRecord['status'],
        attempts: d.attempts,
        lastStatusCode: d.lastStatusCode,
        lastError: d.lastError,
        firstAttemptAt: new Date(d.firstAttemptAt),
        lastAttemptAt: dateOrNull(d.lastAttemptAt),
        nextAttemptAt: dateOrNull(d.nextAttemptAt),
        deliveredAt: dateOrNull(d.deliveredAt),
      })),
    },
    steps: row.steps.map(
      (step): RunStepRecord => ({
        nodeId: step.nodeId,
        status: parseStepStatus(step.status, `${row.id}/${step.nodeId}`),
        attempt: step.attempt,
        pendingDeps: step.pendingDeps,
        costMicros: microsFromDb(step.costMicros),
        reservedMicros: microsFromDb(step.reservedMicros),
        ms: step.ms,
        error: parseRunError(step.error),
        startedAt: dateOrNull(step.startedAt),
        finishedAt: dateOrNull(step.finishedAt),
      }),
    ),
  };
}
