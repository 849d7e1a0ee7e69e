import { isAppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import type { ArtifactExpiryStore, BlobDeleter, ExpiredArtifact } from '../ports';

/** Options of {@link createRetentionSweeper}. */
export interface RetentionSweeperOptions {
  /** Where expired artifacts are found and marked deleted. */
  artifacts: ArtifactExpiryStore;
  /** The store their blobs live in. */
  blobs: BlobDeleter;
  log: Logger;
  /** Artifacts held (and their blobs deleted) per database transaction. */
  batchSize: number;
  /** Pause between the end of one sweep and the start of the next (`RETENTION_SWEEP_INTERVAL_SECONDS`). */
  intervalMs: number;
  /** Delay before the first sweep after `start()`; default a random delay up to min(intervalMs, 30 s), so replicas started together do not sweep in step. */
  initialDelayMs?: number;
  /** Blob deletions in flight at once within a batch; default 8. */
  deleteConcurrency?: number;
  /** Longest one batch's transaction may stay open (its blob deletions included); default 60 s. */
  batchTimeoutMs?: number;
  /** The clock that decides what has expired. */
  now?: () => Date;
  /** Told what each sweep did, or that one failed (metrics). */
  observer?: { swept(result: SweepResult): void; failed(): void };
}

/** What one sweep did. */
export interface SweepResult {
  /** Artifacts whose blob is gone and whose row is now marked deleted. */
  deleted: number;
  /** Artifacts whose blob could not be deleted; their rows wait for the next sweep. */
  failed: number;
}

/** The retention loop of one process. */
export interface RetentionSweeper {
  /** Sweeps every expired artifact now, batch after batch; while one sweep runs, a second call gets its result. */
  sweepOnce(): Promise<SweepResult>;
  /** Sweeps every `intervalMs` from now on (timers are unref'd: they do not keep the process alive). */
  start(): void;
  /** Stops the loop; an in-progress sweep finishes its current batch, and the returned promise waits for it. */
  stop(): Promise<void>;
}

/** Runs `work` over `items`, at most `limit` at a time. */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * The retention sweeper: deletes the blobs of run artifacts whose retention has ended
 * (`expires_at <= now`), uploads included (run artifacts without a run, docs/uploads.md), and
 * marks their rows deleted. Any number of processes may run one: each
 * batch holds its rows with `FOR UPDATE SKIP LOCKED`, so two sweepers never delete the same
 * artifact and never wait for each other. A blob that is already missing counts as deleted; a
 * deletion that fails (the S3 server is down) is logged and counted, and its row is retried by
 * the next sweep. Artifacts without an expiry (recipe assets of live workflows) and run records are
 * never touched; deleting a workflow gives its assets an expiry of now, so they are swept next.
 */
export function createRetentionSweeper(options: RetentionSweeperOptions): RetentionSweeper {
  const { artifacts, blobs, log, batchSize, intervalMs } = options;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
  if (!(intervalMs > 0)) throw new RangeError(`intervalMs must be positive, got ${intervalMs}`);
  const concurrency = Math.max(1, options.deleteConcurrency ?? 8);
  const now = options.now ?? (() => new Date());

  let current: Promise<SweepResult> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let started = false;
  let stopping = false;

  /** Deletes the blobs of `held`; returns the ids whose blob is gone, adds the others to `failedIds`. */
  async function removeBlobs(held: ExpiredArtifact[], failedIds: string[]): Promise<string[]> {
    const gone: string[] = [];
    await forEachLimited(held, concurrency, async (artifact) => {
      try {
        await blobs.delete(artifact.blobKey);
        gone.push(artifact.id);
      } catch (err) {
        // A store that reports a missing blob (`not_found`) has nothing left to delete.
        if (isAppError(err, 'not_found')) {
          gone.push(artifact.id);
          return;
        }
        failedIds.push(artifact.id);
        log.warn({ err, artifactId: artifact.id, blobKey: artifact.blobKey }, 'retention sweep: could not delete an expired blob; it is retried by the next sweep');
      }
    });
    return gone;
  }

  async function sweep(): Promise<SweepResult> {
    const failedIds: string[] = [];
    let deleted = 0;
    while (!stopping) {
      const batch = await artifacts.sweepExpiredBatch(
        { now: now(), limit: batchSize, skipIds: failedIds, timeoutMs: options.batchTimeoutMs },
        (held) => removeBlobs(held, failedIds),
      );
      deleted += batch.deletedIds.length;
      if (batch.held.length < batchSize) break;
      // Not one blob of a full batch could be deleted: the store is probably down; wait for the next sweep.
      if (batch.deletedIds.length === 0) break;
    }
    const result = { deleted, failed: failedIds.length };
    options.observer?.swept(result);
    if (deleted > 0 || failedIds.length > 0) log.info(result, 'retention sweep done');
    else log.debug(result, 'retention sweep found nothing expired');
    return result;
  }

  function sweepOnce(): Promise<SweepResult> {
    current ??= sweep().finally(() => {
      current = null;
    });
    return current;
  }

  function schedule(delayMs: number): void {
    if (!started) return;
    timer = setTimeout(() => {
      timer = null;
      sweepOnce()
        .catch((err: unknown) => {
          log.error({ err }, 'retention sweep failed; retrying at the next interval');
          options.observer?.failed();
        })
        .finally(() => schedule(intervalMs));
    }, delayMs);
    timer.unref();
  }

  return {
    sweepOnce,
    start() {
      if (started) return;
      started = true;
      schedule(options.initialDelayMs ?? Math.floor(Math.random() * Math.min(intervalMs, 30_000)));
    },
    async stop() {
      started = false;
      if (timer) clearTimeout(timer);
      timer = null;
      // Ends the sweep in progress after its current batch (a batch is one transaction).
      stopping = true;
      await current?.catch(() => undefined);
      stopping = false;
    },
  };
}
