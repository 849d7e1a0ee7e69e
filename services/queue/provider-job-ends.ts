import type { Redis } from 'ioredis';
import { broadcastToWorkers, listenToBroadcasts } from './worker-broadcast';

function providerJobEndChannel(prefix: string): string {
  return `${prefix}:provider-job-ends`;
}

/** Tells every worker that a provider says the job of step `jobKey` ended: whoever waits on it polls now. */
export async function publishProviderJobEnd(redis: Redis, prefix: string, jobKey: string): Promise<void> {
  await broadcastToWorkers(redis, providerJobEndChannel(prefix), jobKey);
}

/**
 * Listens for ended provider jobs. A message lost while the connection is down costs only time:
 * the job's step still polls on its timer.
 */
export function subscribeProviderJobEnds(subscriber: Redis, prefix: string, onEnd: (jobKey: string) => void): Promise<() => Promise<void>> {
  return listenToBroadcasts(subscriber, providerJobEndChannel(prefix), onEnd);
}
