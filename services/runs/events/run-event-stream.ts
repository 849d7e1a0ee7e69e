import { TERMINAL_EVENT_TYPES, type RunEvent, type SequencedEvent } from '../../contract';
import { ITERATION_DONE } from '../../platform/iteration-done';
import { isFinished, terminalEventOf, type StoredRun } from './run-ending';
import type { RunEventSource, RunLogFeed, RunLogReader } from '../ports';

/**
 * A run's event stream as clients get it (`POST /v1/runs`, `runs.node`, `GET /v1/runs/:id/events`).
 * The log in Redis is replayed and followed, but Postgres has the last word: every stream of a
 * finished run ends with a terminal event, even when the log cannot give one (a process died
 * between finishing the run in Postgres and appending the event, or the log expired).
 */

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
  /** Told about each failure the stream rides out (a log read or a record read); for logging. */
  onTrouble?: (err: unknown, what: 'log' | 'record') => void;
  /**
   * The run did not exist when the stream began (its id was just chosen): the log is not read
   * when first opened, only followed (`RunLogFeedOptions.fresh`); reopened after a failure, it is.
   */
  fresh?: boolean;
  /**
   * The stream starts at the run's first event, `run.started` (seq 1), and gives it at once: the
   * starter appended it before it returned, so a client whose response has begun always learns
   * the run id, whatever Redis does next. The log is followed after seq 1 (`afterSeq` is unused).
   */
  announce?: boolean;
  /** The run is `finished` and its log is gone (expired): its record's terminal event alone is sent. */
  logless?: boolean;
}

/** Something held while a stream is open and given back when it ends (the organization's stream slot). */
export interface HeldWhileOpen {
  release(): void;
}

/** The run's events after `afterSeq`, from its log and then live, to its terminal event (see {@link RunEventStream}). */
export function followRunEvents(source: Pick<RunEventSource, 'feed'>, loadRun: () => Promise<StoredRun | null>, options: FollowOptions): RunEventStream {
  return new RunEventStream(source, loadRun, options);
}

/** First pause before a broken log feed (Redis restarting, unreachable) is opened again. */
const RETRY_FIRST_MS = 100;
/** Longest such pause; heartbeats go on meanwhile, and the record checks too. */
const RETRY_MAX_MS = 2_000;

type Wake =
  | { kind: 'event'; item: SequencedEvent }
  | { kind: 'logEnded' }
  | { kind: 'logFailed'; err: unknown }
  | { kind: 'record'; run: StoredRun | null }
  | { kind: 'recordFailed'; err: unknown }
  | { kind: 'timer' };

/**
 * One client's stream of a run's events: replays the log after a seq, follows it live, and
 * announces the end (the terminal event, then the end of the iteration). It is the only
 * iteration between the run's log and the client: the log's feed tells it each event by a call.
 *
 * Nothing but the terminal event (or the client going away) ends it: a failed log feed (Redis
 * restarting or unreachable) is opened again from the last seq sent, after a pause that doubles
 * up to {@link RETRY_MAX_MS}; a failed record read (Postgres down, its pool busy) is a check that
 * found nothing. Each time the stream is silent for `checkMs`, the run's record is read (the
 * read runs beside the log, so a slow one delays no event); once the record is finished and a
 * further `checkMs` passes with no event at all, the record's terminal event ends the stream,
 * with the seq after the last one sent. Two silent checks, not a clock comparison: a writer that
 * finished the run and is about to append its event is never overtaken.
 *
 * It subscribes when made (a followed start's subscription so overlaps the run's storage), and
 * ends in one place, `finish`, however it ends: terminal event, the client's abort, `return()`,
 * a failure of its consumer's; there what it holds (`hold`) is given back, in a `finally`.
 *
 * A loop waits for wake-ups (the feed's answer, the record check, the one timer), each delivered
 * once and handled in arrival order, and gives the waiting `next()` each event as its wake-up is
 * handled: a live event reaches the consumer in the turn the feed tells it, with no generator's
 * `yield` and wait for the next wake-up (several promise hops per event and stream, all of them
 * run for every stream of a run before the first one's write leaves; docs/performance/streams.md).
 * It is also the client signal's abort listener (`handleEvent`) and the feed's reader. Callbacks
 * kept per stream are methods or unnamed arrows on purpose: tsx (the service's runtime) names every
 * function bound to a name, and a named closure carries a property dictionary of about 256 bytes.
 */
export class RunEventStream implements AsyncIterableIterator<SequencedEvent>, RunLogReader {
  private readonly queued: Wake[] = [];
  /** The consumer's `next()` waiting for an event. */
  private consumer: { resolve(result: IteratorResult<SequencedEvent>): void; reject(err: unknown): void } | undefined;
  /** The loop is handling wake-ups: a wake-up told meanwhile (the feed may answer in the call) waits in `queued`. */
  private running = false;
  /** `run.started` is still to be given first (`FollowOptions.announce`). */
  private announcing: boolean;
  /** The record's terminal event was given: the iteration ends at the next `next()`. */
  private ending = false;
  /** Set once the stream has ended: the feed given back, awaited by every later call. */
  private closed: Promise<void> | undefined;
  private held: HeldWhileOpen | undefined;
  // One timer, moved only earlier: an event pushes the silence deadline later without touching it,
  // and a timer that fires before the deadline it was set for is set again (a timer per event was
  // most of a stream's cost per event).
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private feed: RunLogFeed | undefined;
  // A log read and a record read under way survive a wake-up by something else: never lost.
  private reading = false;
  private checking = false;
  private finished: StoredRun | undefined;
  private last: number;
  // The type of the last event this stream gave, and whether the log has ended without its terminal one.
  private lastType: RunEvent['type'] | undefined;
  private logOver = false;
  /** The next opening of the log may skip its read (`FollowOptions.fresh`): only the first. */
  private fresh: boolean;
  private failures = 0;
  private retryAt = 0;
  private quietUntil: number;

  constructor(
    private readonly source: Pick<RunEventSource, 'feed'>,
    private readonly loadRun: () => Promise<StoredRun | null>,
    private readonly options: FollowOptions,
  ) {
    this.finished = options.finished;
    this.announcing = options.announce === true;
    this.last = this.announcing ? 1 : options.afterSeq;
    this.lastType = this.announcing ? 'run.started' : undefined;
    this.fresh = options.fresh === true;
    this.quietUntil = Date.now() + options.checkMs;
    if (options.logless && options.finished) {
      this.logOver = true;
      this.quietUntil = Date.now();
    }
    if (options.signal.aborted) {
      this.finish();
      return;
    }
    options.signal.addEventListener('abort', this, { once: true });
    this.arm();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SequencedEvent>> {
    if (this.announcing) {
      this.announcing = false;
      return Promise.resolve({ value: { seq: 1, event: { type: 'run.started', runId: this.options.runId } }, done: false });
    }
    if (this.closed) return this.closed.then(() => ITERATION_DONE);
    if (this.consumer) return Promise.reject(new Error('RunEventStream.next() called while another call waits'));
    const waiting = new Promise<IteratorResult<SequencedEvent>>((resolve, reject) => (this.consumer = { resolve, reject }));
    this.run();
    return waiting;
  }

  /** Ends the stream at once, a waiting `next()` included (it gets done). */
  return(): Promise<IteratorResult<SequencedEvent>> {
    this.finish();
    return this.closed!.then(() => ITERATION_DONE);
  }

  /** Gives `slot` back when the stream ends, however it ends; at once if it has ended. One at a time. */
  hold(slot: HeldWhileOpen): void {
    if (this.closed) slot.release();
    else this.held = slot;
  }

  /** The client's signal aborted. */
  handleEvent(): void {
    this.finish();
  }

  /** The feed's next event (RunLogReader). */
  logEvent(item: SequencedEvent): void {
    this.deliver({ kind: 'event', item });
  }

  /** The feed ended, its subscription given back (RunLogReader). */
  logEnded(): void {
    this.deliver({ kind: 'logEnded' });
  }

  /** The feed broke, its subscription given back (RunLogReader). */
  logFailed(err: unknown): void {
    this.deliver({ kind: 'logFailed', err });
  }

  private deliver(wake: Wake): void {
    if (this.closed) return;
    this.queued.push(wake);
    this.run();
  }

  /** The loop: handles the wake-ups queued while a consumer waits, until one gives it an event or ends the stream. */
  private run(): void {
    if (this.running) return;
    this.running = true;
    try {
      while (this.consumer && !this.closed) {
        if (this.ending) return this.finish();
        this.arm();
        const wake = this.queued.shift();
        if (!wake) return;
        this.handle(wake);
      }
    } catch (err) {
      const consumer = this.consumer;
      this.consumer = undefined;
      this.finish();
      consumer?.reject(err);
    } finally {
      this.running = false;
    }
  }

  /** What the loop waits for: the log opened (or reopened once its retry is due), its next answer, the timer. */
  private arm(): void {
    if (!this.feed && !this.logOver && Date.now() >= this.retryAt) {
      this.feed = this.openFeed();
      // A reopened log has events the stream missed: read.
      this.fresh = false;
    }
    if (this.feed && !this.reading) {
      this.reading = true;
      this.feed.wait(this);
    }
    // While a record read is under way, silence is not measured; while the log is down, its retry is due.
    const quietAt = this.checking ? Infinity : this.quietUntil;
    const wakeAt = this.reading || this.logOver ? quietAt : Math.min(quietAt, this.retryAt);
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

  /** The log's feed from the last seq sent; a source that throws as it is asked fails like a feed whose first read fails. */
  private openFeed(): RunLogFeed {
    try {
      return this.source.feed(this.options.runId, { afterSeq: this.last, fresh: this.fresh });
    } catch (err) {
      return { wait: (reader) => reader.logFailed(err), close: () => Promise.resolve() };
    }
  }

  private handle(wake: Wake): void {
    const { options } = this;
    switch (wake.kind) {
      case 'event': {
        this.reading = false;
        const { item } = wake;
        this.failures = 0;
        this.last = item.seq;
        this.lastType = item.event.type;
        this.quietUntil = Date.now() + options.checkMs;
        return this.give(item);
      }
      case 'logEnded':
        this.reading = false;
        // The log ends after a terminal event, or at once when resumed at it. Ended after an
        // event of ours that was not terminal, it ended on a terminal event at a seq this
        // stream had already used for another event: Redis lost the log and the run's events
        // went on in a new one. Its terminal event then comes from the run's record, now.
        if (this.lastType === undefined || TERMINAL_EVENT_TYPES.includes(this.lastType)) return this.finish();
        this.feed = undefined;
        this.logOver = true;
        this.quietUntil = Date.now();
        return;
      case 'logFailed':
        // The failed feed has already given its subscription back.
        this.reading = false;
        this.feed = undefined;
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
          if (!event) return this.finish();
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

  /**
   * Ends the stream: the timer and the abort listener gone, the feed closed (a waiting `next()`
   * gets done once its subscription is given back), and what it held given back at once.
   */
  private finish(): void {
    if (this.closed) return;
    const { consumer, feed, held } = this;
    this.consumer = this.feed = this.held = undefined;
    try {
      clearTimeout(this.timer);
      this.options.signal.removeEventListener('abort', this);
      this.queued.length = 0;
      this.closed = feed ? feed.close().then(() => undefined, () => undefined) : Promise.resolve();
      if (consumer) void this.closed.then(() => consumer.resolve(ITERATION_DONE));
    } finally {
      held?.release();
    }
  }
}
