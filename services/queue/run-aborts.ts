import type { Redis } from 'ioredis';

/** The channel on which a run's failure or cancellation reaches every worker process. */
export function runAbortChannel(prefix: string): string {
  return `${prefix}:run-aborts`;
}

/** Tells every worker that the run stopped: their in-flight steps of it abort. */
export async function publishRunAbort(redis: Redis, prefix: string, runId: string): Promise<void> {
  await redis.publish(runAbortChannel(prefix), runId);
}

/**
 * Listens for aborted runs on a dedicated subscriber connection (it is put in subscriber mode).
 * Pub/sub may drop a message while the connection is down; an attempt that misses its abort
 * still cannot commit (its run is no longer running), it only runs to its end.
 */
export async function subscribeRunAborts(subscriber: Redis, prefix: string, onAbort: (runId: string) => void): Promise<() => Promise<void>> {
  const channel = runAbortChannel(prefix);
  const listener = (from: string, message: string) => {
    if (from === channel) onAbort(message);
  };
  subscriber.on('message', listener);
  await subscriber.subscribe(channel);
  return async () => {
    subscriber.off('message', listener);
    await subscriber.unsubscribe(channel).catch(() => undefined);
  };
}
