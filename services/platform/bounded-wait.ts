/**
 * `promise`, or the error `onTimeout` makes once `ms` have passed (the promise's eventual result
 * is then ignored). For waits that must end in a bounded time although what they wait on may
 * not: a Redis client that queues its commands while it reconnects answers only once Redis is
 * back.
 */
export async function settleWithin<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // After a stall of the process, timers run before the reads that arrived meanwhile: the
    // rejection waits for this turn's reads (setImmediate runs after the poll phase), so an
    // answer that did arrive in time wins.
    timer = setTimeout(() => setImmediate(() => reject(onTimeout())), ms);
  });
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
