import { randomUUID } from 'node:crypto';
import type { Logger } from '../../platform/logger';
import type { StoredRun } from '../events/run-ending';
import type { RunEventSource } from '../ports';
import { DEFAULT_RECORD_CHECK_MS, RunEventStream } from '../events/run-event-stream';

/** What following a run's events needs. */
export interface FollowDeps {
  events: Pick<RunEventSource, 'feed'>;
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
  events: RunEventStream;
}

/**
 * Starts a run whose events are followed from before it exists: the run's id is chosen here, so
 * the stream's subscription overlaps the run's storage instead of coming after it (the bus waits
 * for a run's first event either way), and the log, empty then, is not read (`fresh`: one Redis
 * round trip less per run). A refused run gives the subscription back before its error is
 * thrown. `signal` ends the stream, never the run.
 *
 * `start` answers the id of the run it stored, or of the run the request's idempotency key
 * already names (docs/runs.md, Idempotent run creation): then that run's stream is followed
 * instead, replayed from its first event, and nothing new was started.
 */
export async function startFollowed(
  deps: FollowDeps,
  caller: { orgId: string; signal: AbortSignal; log: Logger },
  start: (runId: string) => Promise<string>,
): Promise<FollowedRun> {
  const chosen = randomUUID();
  const fresh = followRun(deps, chosen, caller, true);
  let runId: string;
  try {
    runId = await start(chosen);
  } catch (err) {
    await fresh.return();
    throw err;
  }
  if (runId === chosen) return { runId, events: fresh };
  await fresh.return();
  return { runId, events: followRun(deps, runId, caller, false) };
}

/**
 * A started run's events, from its first, to its terminal one (from its record if the log lacks
 * it). Its `run.started` is given at once (`announce`): the starter appended it as seq 1 before
 * it returned.
 */
function followRun(deps: FollowDeps, runId: string, caller: { orgId: string; signal: AbortSignal; log: Logger }, fresh: boolean): RunEventStream {
  return new RunEventStream(deps.events, () => deps.runs.getRun(runId, caller.orgId), {
    runId,
    afterSeq: 0,
    announce: true,
    signal: caller.signal,
    checkMs: deps.recordCheckMs ?? DEFAULT_RECORD_CHECK_MS,
    // A new id: nothing is logged before the run is stored, which takes longer than the
    // subscription (and an event missed meanwhile is read at the next event's gap). A run
    // attached to by its idempotency key is replayed from its log.
    fresh,
    // The stream rides these out (Redis or Postgres blinking); worth a line, not an error.
    onTrouble: (err, what) => caller.log.warn({ err, runId }, what === 'log' ? 'run event stream broke; reopening it' : 'run record not read; checking again later'),
  });
}
