import type { RunError, RunStatus } from '../contract/schemas/run';
import type { Db } from './prisma-client';
import { isUuid, micros, parseRunError, parseRunStatus } from './run-records';

/**
 * Run history: an organization's runs, newest first, a page at a time. Pages are cut by keyset
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
}

/** A run without its steps, definition, inputs and outputs. */
export interface RunSummaryRecord {
  id: string;
  status: RunStatus;
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

/** The page of `orgId`'s runs described by `options`. */
export async function listRunSummaries(db: Db, orgId: string, options: RunListOptions): Promise<RunListPage> {
  const { limit, after, status } = options;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  if (!isUuid(orgId) || (after && !isUuid(after.id))) return { runs: [], next: null };
  const rows = await db.run.findMany({
    where: {
      orgId,
      ...(status ? { status } : {}),
      // (created_at, id) < (after.createdAt, after.id), with the created_at bound spelled out
      // so that it becomes a range condition on the index.
      ...(after ? { createdAt: { lte: after.createdAt }, OR: [{ createdAt: { lt: after.createdAt } }, { id: { lt: after.id } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    // One more than asked tells whether another page follows without a second query.
    take: limit + 1,
    select: { id: true, status: true, error: true, capMicros: true, spentMicros: true, createdAt: true, startedAt: true, finishedAt: true },
  });
  const runs = rows.slice(0, limit).map(
    (row): RunSummaryRecord => ({
      id: row.id,
      status: parseRunStatus(row.status, row.id),
      error: parseRunError(row.error),
      capMicros: micros(row.capMicros),
      spentMicros: micros(row.spentMicros),
      createdAt: row.createdAt,
      startedAt: row.startedAt,
      finishedAt: row.finishedAt,
    }),
  );
  const last = runs[runs.length - 1];
  return { runs, next: rows.length > limit && last ? { createdAt: last.createdAt, id: last.id } : null };
}
