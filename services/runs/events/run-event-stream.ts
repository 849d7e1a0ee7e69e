import { TERMINAL_EVENT_TYPES, type Outputs, type RunEvent, type RunStatus, type SequencedEvent } from '../../contract';
import type { RunRecord } from '../ports';

/**
 * A run's event stream as clients get it (`POST /v1/runs`, `runs.node`, `GET /v1/runs/:id/events`).
 * The log in Redis is replayed and followed, but Postgres has the last word: every stream of a
 * finished run ends with a terminal event, even when the log cannot give one (a process died
 * between finishing the run in Postgres and appending the event, or the log expired).
 */

/** A run as its stream reads it: the record less what streams never look at. */
export type StoredRun = Pick<RunRecord, 'id' | 'orgId' | 'status' | 'error' | 'outputs'>;

/** Port: a run's event log (the run event bus), replayed and then followed live. */
export interface RunEventSource {
  /**
   * Events with seq > `afterSeq`, in order and each once; ends after the terminal event, at once
   * when resumed at or after it, or when `signal` aborts. Its `return()` ends it at once, also
   * while a `next()` waits for an event (an async generator's would wait behind that `next()`).
   */
  events(runId: string, options: { afterSeq?: number; signal?: AbortSignal; fresh?: boolean }): AsyncIterable<SequencedEvent>;
  /** Seq of the run's last logged event; 0 when its log never existed or has expired. */
  lastSeq(runId: string): Promise<number>;
}

/** Run statuses after which nothing changes and the event stream has ended. */
const FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Whether the run reached its final status. */
export function isFinished(run: Pick<RunRecord, 'status'>): boolean {
  return FINISHED.has(run.status);
}

/**
 * The terminal event of a finished run, rebuilt from its record for a stream whose log cannot
 * give it: `run.completed` with the stored outputs, or `run.failed` with the stored error (a
 * cancelled run has no event of its own and reads as failed). Null while the run is unfinished.
 */
export function terminalEventOf(run: StoredRun): RunEvent | null {
  switch (run.status) {
    case 'completed':
      return { type: 'run.completed', outputs: (run.outputs ?? {}) as Outputs };
    case 'failed':
      return { type: 'run.failed', error: run.error ?? { code: 'run_failed', message: 'the run failed; its record keeps no further detail' } };
    case 'cancelled':
      return { type: 'run.failed', error: run.error ?? { code: 'cancelled', message: 'the run was cancelled' } };
    case 'pending':
    case 'running':
      return null;
  }
}

/** How long a stream may stay silent before its run's record is read, unless configured. */
export const DEFAULT_RECORD_CHECK_MS = 10_000;

export interface FollowOptions {
  runId: string;
  /** Send events with a greater seq only. */
  afterSeq: number;
  /** Ends the stream (the client went away). */
  signal: AbortSignal;
  /** Silence after which the run's record is read (and after which a finished run's record ends the stream). */
  checkMs: number;
  /** The run's record, when the caller read it already and it is finished. */
  finished?: StoredRun;
  /** Told about each failure the stream rides out (a log stream or a record read); for logging. */
  onTrouble?: (err: unknown, what: 'log' | 'record') => void;
  /**
   * The run did not exist when the stream began (its id was just chosen): the log is not read
   * when first opened, only followed (`RunEventStreamOptions.fresh`); reopened after a failure, it is.
   */
  fresh?: boolean;
}

export interface ReplayOptions {
  /** Send events with a greater seq only. */
  afterSeq: number;
  /** Seq of the log's last event (0: no log, never written or expired). */
  lastSeq: number;
  /** Ends the stream (the client went away). */
  signal: AbortSignal;
  /** How long a finished run's stream may stay idle before its record's terminal event ends it. */
  finishedGraceMs: number;
  /** How long an unfinished run's stream may stay idle before the run's record is read again. */
  recordCheckMs: number;
  /** Reads the run's record again. */
  loadRun(): Promise<StoredRun | null>;
}

/**
 * The events to send after `afterSeq` of a run read at `run`:
 *
 * - a finished run without a log (expired after 24 h): its record's terminal event alone, with
 *   seq `afterSeq + 1` (1 for a full replay), since the real position is no longer known;
 * - otherwise the log, then live events, to the terminal event, as `followRunEvents` does.
 */
export function replayEvents(source: RunEventSource, run: StoredRun, options: ReplayOptions): AsyncIterable<SequencedEvent> {
  const finished = isFinished(run);
  if (finished && options.lastSeq === 0) return recordedEnding(run, options.afterSeq);
  return followRunEvents(source, options.loadRun, {
    runId: run.id,
    afterSeq: options.afterSeq,
    signal: options.signal,
    checkMs: finished ? options.finishedGraceMs : options.recordCheckMs,
    ...(finished ? { finished: run } : {}),
  });
}

async function* recordedEnding(run: StoredRun, afterSeq: number): AsyncGenerator<SequencedEvent> {
  const event = terminalEventOf(run);
  if (event) yield { seq: afterSeq + 1, event };
}

/** First pause before a broken log stream (Redis restarting, unreachable) is opened again. */
const RETRY_FIRST_MS = 100;
/** Longest such pause; heartbeats go on meanwhile, and the record checks too. */
const RETRY_MAX_MS = 2_000;

type Wake =
  | { kind: 'step'; step: IteratorResult<SequencedEvent> }
  | { kind: 'logFailed'; err: unknown }
  | { kind: 'record'; run: StoredRun | null }
  | { kind: 'recordFailed'; err: unknown }
  | { kind: 'timer' }
  | { kind: 'aborted' };

/** The end of an iteration, as `next()` gives it. */
export const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * The run's events after `afterSeq`, from its log and then live, to its terminal event.
 *
 * Nothing but the terminal event (or the client going away) ends it: a failed log stream (Redis
 * restarting or unreachable) is opened again from the last seq sent, after a pause that doubles
 * up to {@link RETRY_MAX_MS}; a failed record read (Postgres down, its pool busy) is a check that
 * found nothing. Each time the stream is silent for `checkMs`, the run's record is read (the
 * read runs beside the log, so a slow one delays no event); once the record is finished and a
 * further `checkMs` passes with no event at all, the record's terminal event ends the stream,
 * with the seq after the last one sent. Two silent checks, not a clock comparison: a writer that
 * finished the run and is about to append its event is never overtaken.
 */
export function followRunEvents(
  source: Pick<RunEventSource, 'events'>,
  loadRun: () => Promise<StoredRun | null>,
  options: FollowOptions,
): AsyncIterableIterator<SequencedEvent> {
  return new RunEventFollower(source, loadRun, options);
}

/**
 * {@link followRunEvents}' iteration: a loop that waits for wake-ups (the log's pending read, the
 * record check, the one timer, the client's abort), each delivered once per settlement and
 * handled in arrival order, and gives the waiting `next()` each event as its wake-up is handled.
 * An iterator object rather than an async generator: a live event reaches the consumer in the
 * turn its log read settles, where a generator's `yield` and its wait for the next wake-up cost
 * several promise hops per event and stream, all of them run for every stream of a run before
 * the first one's write leaves (docs/performance/streams.md). Nothing stays behind on a promise that
 * outlives a wait (racing the long-lived ones afresh per event left a reaction on each).
 *
 * It is also the client signal's abort listener (`handleEvent`). Callbacks kept per stream are
 * methods or unnamed arrows on purpose: tsx (the service's runtime) names every function bound to
 * a name, and a named closure carries a property dictionary of about 256 bytes.
 */
class RunEventFollower implements AsyncIterableIterator<SequencedEvent> {
  private readonly queued: Wake[] = [];
  /** The consumer's `next()` waiting for an event. */
  private consumer: { resolve(result: IteratorResult<SequencedEvent>): void; reject(err: unknown): void } | undefined;
  /** The client's signal aborted (read here per event: AbortSignal's own getter is not cheap). */
  private aborted: boolean;
  /** The record's terminal event was given: the iteration ends at the next `next()`. */
  private ending = false;
  /** Set once the iteration has ended: the clean-up (the log's stream given back), awaited by every later call. */
  private closed: Promise<void> | undefined;
  // One timer, moved only earlier: an event pushes the silence deadline later without touching it,
  // and a timer that fires before the deadline it was set for is set again (a timer per event was
  // most of a stream's cost per event).
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private iterator: AsyncIterator<SequencedEvent> | undefined;
  // A log read and a record read under way survive a wake-up by something else: never lost.
  private reading = false;
  private checking = false;
  private finished: StoredRun | undefined;
  private last: number;
  // The type of the last event this stream gave, and whether the log has ended without its terminal one.
  private lastType: RunEvent['type'] | undefined;
  private logEnded = false;
  /** The next opening of the log may skip its read (`FollowOptions.fresh`): only the first. */
  private fresh: boolean;
  private failures = 0;
  private retryAt = 0;
  private quietUntil: number;

  constructor(
    private readonly source: Pick<RunEventSource, 'events'>,
    private readonly loadRun: () => Promise<StoredRun | null>,
    private readonly options: FollowOptions,
  ) {
    options.signal.addEventListener('abort', this, { once: true });
    this.aborted = options.signal.aborted;
    this.finished = options.finished;
    this.last = options.afterSeq;
    this.fresh = options.fresh === true;
    this.quietUntil = Date.now() + options.checkMs;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.closed) return this.closed.then(() => DONE);
    if (this.consumer) return Promise.reject(new Error('followRunEvents: next() called while another call waits'));
    const waiting = new Promise<IteratorResult<SequencedEvent>>((resolve, reject) => (this.consumer = { resolve, reject }));
    this.run();
    return waiting;
  }

  /** Ends the iteration at once, a waiting `next()` included (it gets done). */
  return(): Promise<IteratorResult<SequencedEvent>> {
    this.end();
    return this.closed!.then(() => DONE);
  }

  /** The client's signal aborted. */
  handleEvent(): void {
    this.aborted = true;
    this.deliver({ kind: 'aborted' });
  }

  private deliver(wake: Wake): void {
    if (this.closed) return;
    this.queued.push(wake);
    this.run();
  }

  /** The loop: handles the wake-ups queued while a consumer waits, until one gives it an event or ends the iteration. */
  private run(): void {
    try {
      while (this.consumer && !this.closed) {
        if (this.aborted || this.ending) return this.end();
        this.arm();
        const wake = this.queued.shift();
        if (!wake) return;
        this.handle(wake);
      }
    } catch (err) {
      const consumer = this.consumer;
      this.consumer = undefined;
      this.end();
      consumer?.reject(err);
    }
  }

  /** What the loop waits for: the log opened (or reopened once its retry is due), its next read, the timer. */
  private arm(): void {
    if (!this.iterator && !this.logEnded && Date.now() >= this.retryAt) {
      this.iterator = openLog(this.source, this.options.runId, this.last, this.options.signal, this.fresh);
      // A reopened log has events the stream missed: read.
      this.fresh = false;
    }
    if (this.iterator && !this.reading) {
      this.reading = true;
      this.iterator.next().then(
        (step) => this.deliver({ kind: 'step', step }),
        (err: unknown) => this.deliver({ kind: 'logFailed', err }),
      );
    }
    // While a record read is under way, silence is not measured; while the log is down, its retry is due.
    const quietAt = this.checking ? Infinity : this.quietUntil;
    const wakeAt = this.reading || this.logEnded ? quietAt : Math.min(quietAt, this.retryAt);
    if (wakeAt < this.timerAt) {
      clearTimeout(this.timer);
      this.timerAt = wakeAt;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.deliver({ kind: 'timer' });
      }, Math.max(0, wakeAt - Date.now()));
    }
  }

  private handle(wake: Wake): void {
    const { options } = this;
    switch (wake.kind) {
      case 'aborted':
        return this.end();
      case 'step': {
        this.reading = false;
        // The log's stream ended because the client went away: not an ending of the log.
        if (this.aborted) return this.end();
        const { step } = wake;
        if (step.done) {
          // The log ends after a terminal event, or at once when resumed at it. Ended after an
          // event of ours that was not terminal, it ended on a terminal event at a seq this
          // stream had already used for another event: Redis lost the log and the run's events
          // went on in a new one. Its terminal event then comes from the run's record, now.
          if (this.lastType === undefined || TERMINAL_EVENT_TYPES.includes(this.lastType)) return this.end();
          this.iterator = undefined;
          this.logEnded = true;
          this.quietUntil = Date.now();
          return;
        }
        this.failures = 0;
        this.last = step.value.seq;
        this.lastType = step.value.event.type;
        this.quietUntil = Date.now() + options.checkMs;
        return this.give(step.value);
      }
      case 'logFailed':
        // The failed stream has already released its subscription (its own finally ran).
        this.reading = false;
        this.iterator = undefined;
        this.failures++;
        this.retryAt = Date.now() + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (this.failures - 1));
        options.onTrouble?.(wake.err, 'log');
        return;
      case 'record':
        this.checking = false;
        if (wake.run && isFinished(wake.run)) this.finished = wake.run;
        this.quietUntil = Date.now() + options.checkMs;
        return;
      case 'recordFailed':
        this.checking = false;
        this.quietUntil = Date.now() + options.checkMs;
        options.onTrouble?.(wake.err, 'record');
        return;
      case 'timer': {
        // The timer may be one set for an earlier deadline (or a log retry): only silence counts.
        if (this.checking || Date.now() < this.quietUntil) return;
        if (this.finished) {
          const event = terminalEventOf(this.finished);
          if (!event) return this.end();
          this.ending = true;
          return this.give({ seq: this.last + 1, event });
        }
        this.checking = true;
        Promise.resolve()
          .then(() => this.loadRun())
          .then(
            (run) => this.deliver({ kind: 'record', run }),
            (err: unknown) => this.deliver({ kind: 'recordFailed', err }),
          );
        return;
      }
    }
  }

  /** Hands an event to the waiting `next()`. */
  private give(value: SequencedEvent): void {
    const consumer = this.consumer!;
    this.consumer = undefined;
    consumer.resolve({ value, done: false });
  }

  /** Ends the iteration: the timer and the abort listener gone, the log's stream given back, a waiting `next()` done once that is. */
  private end(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.options.signal.removeEventListener('abort', this);
    this.queued.length = 0;
    // Ends a next() still pending at once (the port's promise) and releases the subscription.
    const iterator = this.iterator;
    this.iterator = undefined;
    this.closed = iterator?.return ? iterator.return(undefined).then(() => undefined, () => undefined) : Promise.resolve();
    const consumer = this.consumer;
    this.consumer = undefined;
    if (consumer) void this.closed.then(() => consumer.resolve(DONE));
  }
}

/** The log's stream from `afterSeq`; a source that throws as it is called fails like one whose first read fails. */
function openLog(source: Pick<RunEventSource, 'events'>, runId: string, afterSeq: number, signal: AbortSignal, fresh: boolean): AsyncIterator<SequencedEvent> {
  try {
    return source.events(runId, { afterSeq, signal, fresh })[Symbol.asyncIterator]();
  } catch (err) {
    return { next: () => Promise.reject(err) };
  }
}
