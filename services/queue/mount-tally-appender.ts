import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script';
import { nextAppendId, runAppendsKey, runEventKeys, runStartedJson } from './run-event-keys';

/**
 * Appends events of mounted workflows' steps and keeps each mount node's tally (when its first
 * inner step started, which inner steps completed, their cost), in one script with the append
 * (`scripts/append-mount-events.lua`): the mount node's own `step.started` lands before the first
 * inner step's progress, and its `step.completed` after the last one's, whichever workers append
 * them, in whatever order. Appending works as the run event bus's does (same log, seq, entry
 * format and channel: both scripts include `scripts/includes/append-event.lua`).
 */
const APPEND_MOUNT_EVENTS = RedisScript.fromFile('append-mount-events');

/** One event of a mounted step and what it tells its mount node's tally. */
export interface MountTallyEntry {
  /** The event as the stream shows it. */
  event: unknown;
  /** Null for an event that changes no tally (another node's, or progress). */
  mark: { mountId: string; innerId: string; phase: 'started' | 'completed'; costMicros: number; innerSteps: number } | null;
}

/** Appends mounted steps' events with their mount nodes' tally (see `scripts/append-mount-events.lua`). */
export class MountTallyAppender {
  constructor(private readonly options: { redis: Redis; prefix: string; logTtlSeconds: number }) {}

  async appendTallied(runId: string, entries: readonly MountTallyEntry[]): Promise<number> {
    const { log, channel } = runEventKeys(this.options.prefix, runId);
    const args: string[] = [channel, String(this.options.logTtlSeconds), runStartedJson(runId), nextAppendId()];
    for (const { event, mark } of entries) {
      args.push(JSON.stringify(event), mark?.mountId ?? '', mark?.phase ?? '', mark?.innerId ?? '', String(mark?.costMicros ?? 0), String(mark?.innerSteps ?? 0));
    }
    return Number(await APPEND_MOUNT_EVENTS.run(this.options.redis, [log, `${log}:mounts`, runAppendsKey(log)], args));
  }
}
