import { randomUUID } from 'node:crypto';
import type { SequencedEvent } from '../../contract';
import type { Logger } from '../../platform/logger';
import { DEFAULT_RECORD_CHECK_MS, DONE, followRunEvents, type RunEventSource, type StoredRun } from '../events/run-event-stream';

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

/** Why a refused run's subscription is given back: one instance (see `stop` below). */
const NOT_STARTED = new DOMException('the run was not started', 'AbortError');

/** A started run and its stream of events from the first. */
export interface FollowedRun {
  runId: string;
  events: AsyncIterable<SequencedEvent>;
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
  const fresh = subscribe(deps, chosen, caller, true);
  let runId: string;
  try {
    runId = await start(chosen);
  } catch (err) {
    await fresh.giveBack();
    throw err;
  }
  if (runId === chosen) return { runId, events: fresh.announced() };
  await fresh.giveBack();
  return { runId, events: subscribe(deps, runId, caller, false).announced() };
}

/** A subscription to a run's events, made before the run may exist (`fresh`) or to replay one that does. */
function subscribe(deps: FollowDeps, runId: string, caller: { orgId: string; signal: AbortSignal; log: Logger }, fresh: boolean) {
  const { signal } = caller;
  const controller = new AbortController();
  // The caller's reason passed on: `abort()` without one builds a DOMException, stack and all, at
  // every stream's end (each response's close aborts its call's signal).
  const stop = () => controller.abort(signal.reason);
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) stop();
  const iterator = followRun(deps, runId, caller, controller.signal, fresh)[Symbol.asyncIterator]();
  // The first next() subscribes; what it resolves to is the stream's first event.
  const first = iterator.next();
  first.catch(() => undefined);
  const release = () => signal.removeEventListener('abort', stop);
  return {
    announced: (): AsyncIterable<SequencedEvent> => new AnnouncedRun(runId, iterator, first, release),
    /** For a run that was not started under this id: the subscription is ended and given back. */
    async giveBack(): Promise<void> {
      controller.abort(NOT_STARTED);
      await first.catch(() => undefined);
      await iterator.return?.(undefined);
      release();
    },
  };
}

/**
 * A stored run's stream: its `run.started` first, at once, then the rest of an iteration whose
 * first `next()` is under way. The starter appended `run.started` as seq 1 before it returned,
 * so sending it without waiting for the log is sending the log's first event; a client whose
 * response has begun therefore always learns the run id, whatever Redis does next.
 *
 * An iterator object rather than an async generator: each event passes in the turn its follower's
 * `next()` settles, not a `yield` and an `await` later (several promise hops per event;
 * docs/performance/streams.md). `return()` ends it at once.
 */
class AnnouncedRun implements AsyncIterableIterator<SequencedEvent> {
  private announcedYet = false;
  /** The follower's first `next()`, under way since before the run was stored; taken by the first read. */
  private first: Promise<IteratorResult<SequencedEvent>> | undefined;
  private closed: Promise<void> | undefined;

  constructor(
    private readonly runId: string,
    private readonly iterator: AsyncIterator<SequencedEvent>,
    first: Promise<IteratorResult<SequencedEvent>>,
    private readonly done: () => void,
  ) {
    this.first = first;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.closed) return this.closed.then(() => DONE);
    if (!this.announcedYet) {
      this.announcedYet = true;
      return Promise.resolve({ value: { seq: 1, event: { type: 'run.started', runId: this.runId } }, done: false });
    }
    const step = this.first ?? this.iterator.next();
    this.first = undefined;
    return step.then(
      (result) => this.shown(result),
      (err: unknown) => this.close().then(() => Promise.reject(err)),
    );
  }

  return(): Promise<IteratorResult<SequencedEvent>> {
    return this.close().then(() => DONE);
  }

  /** The follower's event as the client sees it, past the `run.started` sent already. */
  private shown(step: IteratorResult<SequencedEvent>): IteratorResult<SequencedEvent> | Promise<IteratorResult<SequencedEvent>> {
    if (step.done) return this.close().then(() => DONE);
    const { seq, event } = step.value;
    if (seq === 1 && event.type === 'run.started') return this.next();
    // Only a terminal event from the run's record can come at seq 1 (the log lost every event);
    // 2 keeps the ids the client sees increasing.
    return { value: seq > 1 ? step.value : { seq: 2, event }, done: false };
  }

  private close(): Promise<void> {
    if (!this.closed) {
      this.done();
      this.closed = Promise.resolve(this.iterator.return?.(undefined)).then(() => undefined);
    }
    return this.closed;
  }
}

/** A started run's events, from its first, to its terminal one (from its record if the log lacks it). */
function followRun(deps: FollowDeps, runId: string, caller: { orgId: string; log: Logger }, signal: AbortSignal, fresh: boolean): AsyncIterable<SequencedEvent> {
  return followRunEvents(deps.events, () => deps.runs.getRun(runId, caller.orgId), {
    runId,
    afterSeq: 0,
    signal,
    checkMs: deps.recordCheckMs ?? DEFAULT_RECORD_CHECK_MS,
    // A new id: nothing is logged before the run is stored, which takes longer than the
    // subscription (and a run.started missed meanwhile is read at the next event's gap). A run
    // attached to by its idempotency key is replayed from its log's first event.
    fresh,
    // The stream rides these out (Redis or Postgres blinking); worth a line, not an error.
    onTrouble: (err, what) => caller.log.warn({ err, runId }, what === 'log' ? 'run event stream broke; reopening it' : 'run record not read; checking again later'),
  });
}
