import type { Redis } from 'ioredis';
import { broadcastToWorkers, listenToBroadcasts } from './worker-broadcast';

function batchStartChannel(prefix: string): string {
  return `${prefix}:batch-starts`;
}

/** Tells every worker that batch `batchId` has rows to start (it was stored, or retried): its feeders give it a turn now. */
export async function publishBatchStart(redis: Redis, prefix: string, batchId: string): Promise<void> {
  await broadcastToWorkers(redis, batchStartChannel(prefix), batchId);
}

/**
 * Listens for batches to start. A message lost while the connection is down costs only time: the
 * feeders' sweep finds every unfinished batch (BATCH_FEED_IDLE_MS at the longest).
 */
export function subscribeBatchStarts(subscriber: Redis, prefix: string, onStart: (batchId: string) => void): Promise<() => Promise<void>> {
  return listenToBroadcasts(subscriber, batchStartChannel(prefix), onStart);
}
