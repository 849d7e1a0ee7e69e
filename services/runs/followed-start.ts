import { randomUUID } from 'node:crypto';
import type { SequencedEvent } from '../contract';
import type { Logger } from '../platform/logger';
import { DEFAULT_RECORD_CHECK_MS, followRunEvents, type RunEventSource, type StoredRun } from './run-event-stream';

/** What following a run's events needs. */
export interface FollowDeps {
  events: Pick<RunEventSource, 'events'>;
  /**
   * The run store: a stream silent for `recordCheckMs` reads its run's record, so that a run
   * finished in Postgres whose terminal event never reached the log still ends its stream.
   */
  runs: { getRun(runId: string, orgId: string): Promise<StoredRun | null> };
  recordCheckMs?: number;
}

/** A started run and its stream of events from the first. */
export interface FollowedRun {
  runId: string;
  events: AsyncIterable<SequencedEvent>;
}

/**
 * Starts a run whose events are followed from before it exists: the run's id is chosen here, so
 * the stream's subscription and first log read overlap the run's storage instead of coming after
 * it (the bus waits for a run's first event either way). A refused run gives the subscription
 * back before its error is thrown. `signal` ends the stream, never the run.
 */
export async function startFollowed(
  deps: FollowDeps,
  caller: { orgId: string; signal: AbortSignal; log: Logger },
  start: (runId: string) => Promise<string>,
): Promise<FollowedRun> {
  const { signal } = caller;
  const runId = randomUUID();
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) controller.abort();
  const iterator = followRun(deps, runId, caller, controller.signal)[Symbol.asyncIterator]();
  // The first next() subscribes; what it resolves to is the stream's first event.
  const first = iterator.next();
  first.catch(() => undefined);
  const release = () => signal.removeEventListener('abort', stop);
  try {
    await start(runId);
  } catch (err) {
    controller.abort();
    await first.catch(() => undefined);
    await iterator.return?.(undefined);
    release();
    throw err;
  }
  return { runId, events: announced(runId, iterator, first, release) };
}

/**
 * A stored run's stream: its `run.started` first, at once, then the rest of an iteration whose
 * first `next()` is under way. The starter appended `run.started` as seq 1 before it returned,
 * so sending it without waiting for the log is sending the log's first event; a client whose
 * response has begun therefore always learns the run id, whatever Redis does next.
 */
async function* announced(runId: string, iterator: AsyncIterator<SequencedEvent>, first: Promise<IteratorResult<SequencedEvent>>, done: () => void): AsyncGenerator<SequencedEvent> {
  try {
    yield { seq: 1, event: { type: 'run.started', runId } };
    for (let step = await first; !step.done; step = await iterator.next()) {
      const { seq, event } = step.value;
      if (seq === 1 && event.type === 'run.started') continue;
      // Only a terminal event from the run's record can come at seq 1 (the log lost every event);
      // 2 keeps the ids the client sees increasing.
      yield seq > 1 ? step.value : { seq: 2, event };
    }
  } finally {
    done();
    await iterator.return?.(undefined);
  }
}

/** A started run's events, from its first, to its terminal one (from its record if the log lacks it). */
function followRun(deps: FollowDeps, runId: string, caller: { orgId: string; log: Logger }, signal: AbortSignal): AsyncIterable<SequencedEvent> {
  return followRunEvents(deps.events, () => deps.runs.getRun(runId, caller.orgId), {
    runId,
    afterSeq: 0,
    signal,
    checkMs: deps.recordCheckMs ?? DEFAULT_RECORD_CHECK_MS,
    // The stream rides these out (Redis or Postgres blinking); worth a line, not an error.
    onTrouble: (err, what) => caller.log.warn({ err, runId }, what === 'log' ? 'run event stream broke; reopening it' : 'run record not read; checking again later'),
  });
}
