import type { Redis } from 'ioredis';
import { broadcastToWorkers, listenToBroadcasts } from './worker-broadcast';

/** The channel on which a run's failure or cancellation reaches every worker process. */
export function runAbortChannel(prefix: string): string {
  return `${prefix}:run-aborts`;
}

/** Tells every worker that the run stopped: their in-flight steps of it abort. */
export async function publishRunAbort(redis: Redis, prefix: string, runId: string): Promise<void> {
  await broadcastToWorkers(redis, runAbortChannel(prefix), runId);
}

/**
 * Listens for aborted runs on a dedicated subscriber connection (it is put in subscriber mode).
 * Pub/sub may drop a message while the connection is down; an attempt that misses its abort
 * still cannot commit (its run is no longer running), it only runs to its end.
 */
export function subscribeRunAborts(subscriber: Redis, prefix: string, onAbort: (runId: string) => void): Promise<() => Promise<void>> {
  return listenToBroadcasts(subscriber, runAbortChannel(prefix), onAbort);
}
