import type { Db } from './prisma-client';
import { isUuid, jsonParam } from './run-records';

/** A stored blob to record (the shape of the nodes' `RecordedArtifact`). */
export interface NewArtifact {
  blobKey: string;
  mimeType: string;
  sizeBytes: number;
  metadata?: Record<string, unknown>;
  /** When the retention sweeper may delete it; null: never (recipe assets). */
  expiresAt: Date | null;
}

/** Records the artifacts of one run; structurally the nodes' `ArtifactRecorder` port. */
export interface RunArtifactRecorder {
  record(entry: NewArtifact): Promise<void>;
}

/** An expired artifact held by a sweep. */
export interface ExpiredArtifact {
  id: string;
  runId: string | null;
  blobKey: string;
  expiresAt: Date;
}

/** Options of {@link ArtifactRepository.sweepExpiredBatch}. */
export interface SweepBatchOptions {
  /** Artifacts with `expires_at <= now` are expired. */
  now: Date;
  /** Most artifacts held at once. */
  limit: number;
  /** Ids to pass over (those whose deletion already failed in this sweep). */
  skipIds?: readonly string[];
  /** Longest the batch's transaction (hence `remove`) may take before it is rolled back; default 60 s. */
  timeoutMs?: number;
}

/** What one batch did. */
export interface SweepBatchResult {
  /** The expired artifacts the batch held, oldest expiry first; fewer than `limit`: nothing more is waiting. */
  held: ExpiredArtifact[];
  /** Ids now marked deleted. */
  deletedIds: string[];
}

interface ExpiredRow {
  id: string;
  run_id: string | null;
  blob_key: string;
  expires_at: Date;
}

/**
 * The `artifacts` table: one row per blob the service stored, written when it is stored, and
 * marked `deleted_at` by the retention sweeper once the blob is gone. Rows are never removed and
 * run records are never touched: a run's `outputs` keep the envelope of an artifact whose blob
 * has been deleted (its ref then answers 404).
 */
export class ArtifactRepository {
  constructor(private readonly db: Db) {}

  /** Records a stored blob of run `runId` (null: not a run's, e.g. a recipe asset). */
  async record(runId: string | null, entry: NewArtifact): Promise<void> {
    if (runId !== null && !isUuid(runId)) throw new RangeError(`record: run id "${runId}" is not a UUID`);
    if (!Number.isSafeInteger(entry.sizeBytes) || entry.sizeBytes < 0) throw new RangeError(`record: sizeBytes must be a non-negative integer, got ${entry.sizeBytes}`);
    await this.db.$executeRaw`
      INSERT INTO artifacts (run_id, blob_key, mime_type, size_bytes, metadata, expires_at)
      VALUES (${runId}::uuid, ${entry.blobKey}, ${entry.mimeType}, ${BigInt(entry.sizeBytes)},
              ${jsonParam(entry.metadata ?? {}, 'metadata')}::jsonb, ${entry.expiresAt}::timestamptz)`;
  }

  /** The recorder a run's artifact store is given: `record` bound to `runId`. */
  recorderFor(runId: string | null): RunArtifactRecorder {
    return { record: (entry) => this.record(runId, entry) };
  }

  /**
   * One batch of the retention sweep, in one transaction: holds up to `limit` expired artifacts
   * not yet deleted (oldest expiry first) with `FOR UPDATE SKIP LOCKED`, hands them to `remove`
   * (which deletes their blobs and returns the ids it deleted), and marks those ids deleted.
   * A concurrent sweeper skips the rows this one holds instead of waiting for them, and no longer
   * sees them once this transaction commits: each artifact is removed by one sweeper. Rows
   * `remove` does not return stay as they were, for a later sweep. Should the transaction fail
   * after blobs were deleted, the rows stay too, and the next sweep deletes the (missing) blobs
   * again, which is harmless. Rows without an expiry (recipe assets) are never held.
   */
  async sweepExpiredBatch(options: SweepBatchOptions, remove: (held: ExpiredArtifact[]) => Promise<readonly string[]>): Promise<SweepBatchResult> {
    if (!Number.isSafeInteger(options.limit) || options.limit < 1) throw new RangeError(`sweepExpiredBatch: limit must be a positive integer, got ${options.limit}`);
    const skip = [...(options.skipIds ?? [])];
    const work = async (tx: Db): Promise<SweepBatchResult> => {
      // Served by the (deleted_at, expires_at) index: the live rows come first, in expiry order.
      const rows = await tx.$queryRaw<ExpiredRow[]>`
        SELECT id, run_id, blob_key, expires_at FROM artifacts
        WHERE deleted_at IS NULL AND expires_at <= ${options.now}::timestamptz AND id <> ALL(${skip}::uuid[])
        ORDER BY expires_at, id
        LIMIT ${options.limit}
        FOR UPDATE SKIP LOCKED`;
      const held = rows.map((row) => ({ id: row.id, runId: row.run_id, blobKey: row.blob_key, expiresAt: row.expires_at }));
      if (held.length === 0) return { held, deletedIds: [] };
      const heldIds = new Set(held.map((a) => a.id));
      const removed = [...new Set(await remove(held))].filter((id) => heldIds.has(id));
      if (removed.length > 0) {
        await tx.$executeRaw`UPDATE artifacts SET deleted_at = now() WHERE id = ANY(${removed}::uuid[]) AND deleted_at IS NULL`;
      }
      return { held, deletedIds: removed };
    };
    if (!('$transaction' in this.db)) return work(this.db);
    const timeout = options.timeoutMs ?? 60_000;
    return this.db.$transaction((tx) => work(tx), { timeout, maxWait: Math.min(timeout, 10_000) });
  }
}
