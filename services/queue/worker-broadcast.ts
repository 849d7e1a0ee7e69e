import type { Redis } from 'ioredis';

/** Publishes `message` to every worker process listening on `channel`. */
export async function broadcastToWorkers(redis: Redis, channel: string, message: string): Promise<void> {
  await redis.publish(channel, message);
}

/**
 * Listens on `channel` over a dedicated subscriber connection (it is put in subscriber mode; one
 * connection may carry several channels). Pub/sub drops what is published while the connection
 * is down: each use has its own way of making up for a missed message.
 */
export async function listenToBroadcasts(subscriber: Redis, channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
  const listener = (from: string, message: string) => {
    if (from === channel) onMessage(message);
  };
  subscriber.on('message', listener);
  await subscriber.subscribe(channel);
  return async () => {
    subscriber.off('message', listener);
    await subscriber.unsubscribe(channel).catch(() => undefined);
  };
}
