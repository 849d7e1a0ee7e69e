import type { Redis } from 'ioredis';

/**
 * What a `RunEventBus` is built from. Connections are injected (and stay the caller's to quit),
 * so a process wires one bus from its config in `main.ts` and tests can point it anywhere.
 */
export interface RunEventBusOptions {
  /** Connection for commands (the append script, log reads). May be shared with other users. */
  redis: Redis;
  /**
   * Dedicated connection that the bus puts in subscriber mode; one per process, shared by every
   * stream. Create it with `createRedisConnection` (commands queue while it reconnects). Leave it
   * out in processes that only append (workers): a stream of `events()` or `feed()` then fails.
   */
  subscriber?: Redis;
  /** Namespace of every key and channel, so deployments and test files can share a Redis. */
  prefix: string;
  /** Expiry of a run's log, renewed on every append. Default 24 h. */
  logTtlSeconds?: number;
}

/** Options of one stream of a run's log (`RunEventBus.feed`). */
export interface RunLogFeedOptions {
  /** Yield only events with a greater seq: 0 for all, the SSE `Last-Event-ID` to resume. */
  afterSeq?: number;
  /** Ends the iteration (without an error) when aborted, e.g. when the client goes away. */
  signal?: AbortSignal;
  /**
   * The run had no log when the stream began (its id was just chosen, and nothing is appended
   * before the subscription is answered): no first read of the log, its events come live. A gap
   * (a live seq past the next one) or a resubscription still reads it.
   */
  fresh?: boolean;
}

/** Default expiry of a run's event log, in seconds. */
export const DEFAULT_LOG_TTL_SECONDS = 24 * 60 * 60;
