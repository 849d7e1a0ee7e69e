import { randomBytes } from 'node:crypto';
import type { RunEvent } from '../contract';

/**
 * Where a run's events live in Redis. Both names start with the deployment's prefix so that
 * several deployments (and every integration test file) can share one Redis.
 *
 * The log is a list whose index i holds the event with seq i + 1; pub/sub channel names are a
 * namespace apart from keys, but share the prefix so `PUBSUB CHANNELS prefix:*` finds ours.
 */
export interface RunEventKeys {
  /** The replay log: a list of `{"seq":N,"at":MS,"event":...}` strings, oldest first. */
  log: string;
  /** The live channel: every appended entry is published here, in seq order. */
  channel: string;
}

/** The log key and live channel of one run. */
export function runEventKeys(prefix: string, runId: string): RunEventKeys {
  return { log: `${prefix}:run:${runId}:events`, channel: `${prefix}:run:${runId}:live` };
}

/**
 * The event every run's log opens with, as the append scripts push it: whoever appends first
 * (the starter, or a worker handed a step by the reaper before the starter got there) opens the
 * log with it, so `run.started` is always seq 1 and never logged twice.
 */
export function runStartedJson(runId: string): string {
  const event: RunEvent = { type: 'run.started', runId };
  return JSON.stringify(event);
}

/**
 * The hash beside a run's log that records the appends it holds by id (see the append scripts),
 * so that an append sent twice is logged once.
 */
export function runAppendsKey(logKey: string): string {
  return `${logKey}:appends`;
}

/** This process' part of every append id: two processes never share one. */
const APPEND_ID_TAG = randomBytes(6).toString('base64url');
let appendCount = 0;

/** A new append id, unique among every process' (a tag of this process and a count; short: the run's appends hash keeps one per append). */
export function nextAppendId(): string {
  appendCount += 1;
  return `${APPEND_ID_TAG}${appendCount.toString(36)}`;
}
