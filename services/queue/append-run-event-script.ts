import type { Redis } from 'ioredis';
import { RedisScript } from './redis-script';
import { nextAppendId, runAppendsKey } from './run-event-keys';

/**
 * Appends events to a run: assigns their sequence numbers, pushes them onto the replay log,
 * renews the log's expiry and publishes them, in one script (`scripts/append-run-event.lua`), so
 * the log order, the seq order and the publish order are the same order even with many writers,
 * and several events of one writer (a step's completion and the run's) cost one round trip.
 */
const APPEND = RedisScript.fromFile('append-run-event');

/**
 * Runs the append script (by its SHA; see `RedisScript`); resolves to the last event's seq.
 * `openerJson`: the run's `run.started`, pushed first if the log is empty ('' for none). With no
 * events there is nothing to append twice, so the append goes without an id.
 */
export async function appendRunEventScript(redis: Redis, logKey: string, channel: string, openerJson: string, eventJsons: readonly string[], ttlSeconds: number): Promise<number> {
  const appendId = eventJsons.length > 0 ? nextAppendId() : '';
  return Number(await APPEND.run(redis, [logKey, runAppendsKey(logKey)], [channel, String(ttlSeconds), openerJson, appendId, ...eventJsons]));
}
