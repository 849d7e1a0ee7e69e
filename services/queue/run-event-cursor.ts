import { AppError } from '../platform/app-error';
import type { ChannelListener } from './channel-fanout';
import { isTerminalEvent, type SequencedEvent } from './sequenced-event';

/** One read of a run's log, taken atomically. */
export interface RunLogRead {
  /** The entries with seq > afterSeq, oldest first. */
  events: SequencedEvent[];
  /** The log's last entry, if any: tells a stream resumed after the terminal event to end. */
  tail: SequencedEvent | undefined;
}

/** Who waits for a cursor's next event (`RunEventCursor.wait`): told exactly one of these. */
export interface CursorWaiter {
  event(item: SequencedEvent): void;
  /** The stream is over (its terminal event given, or stopped). */
  end(): void;
  fail(err: unknown): void;
}

/** Reads the log of a run after a seq. */
export type ReadRunLog = (afterSeq: number) => Promise<RunLogRead>;

const WAIT = Symbol('wait');
const FAILED = Symbol('failed');

/**
 * The state of one stream of one run: merges the replay log and live messages into one
 * sequence without gap or duplicate, and hands it to the consumer one event at a time.
 *
 * Invariant: `last` is the highest seq handed over (queued in `ready`), and every seq up to it
 * was handed over exactly once. A live message is accepted at once only when it is `last + 1`
 * and no log read is running; anything else waits in `ahead` until a log read closes the gap.
 * That works because the append script pushes to the log before it publishes: by the time a
 * message with seq s arrives, the log holds every seq up to s.
 */
export class RunEventCursor implements ChannelListener<SequencedEvent | Error> {
  private last: number;
  private readonly ready: SequencedEvent[] = [];
  private readonly ahead = new Map<number, SequencedEvent>();
  private reading = false;
  private readAgain = false;
  /** The terminal event has been queued: nothing after it is taken. */
  private ended = false;
  private stopped = false;
  private failure: unknown = undefined;
  /** The consumer waiting for an event: told by the change that gives it one. */
  private waiter: CursorWaiter | undefined;

  constructor(
    private readonly runId: string,
    afterSeq: number,
    private readonly readLog: ReadRunLog,
  ) {
    this.last = afterSeq;
  }

  /** A live message, decoded once for every stream of the run: shared, so never changed here. */
  message(item: SequencedEvent | Error): void {
    if (this.ended || this.stopped) return;
    if (item instanceof Error) {
      this.fail(item);
      return;
    }
    if (item.seq <= this.last) {
      if (!isTerminalEvent(item.event)) return;
      // The terminal event at the resume point, published before this stream subscribed and
      // delivered after: the stream resumed after the run's end, so it ends. Below that point,
      // a terminal event this stream cannot have seen: the log was begun again.
      if (item.seq === this.last) this.end();
      else this.fail(logRestarted(this.runId, item.seq, this.last));
      return;
    }
    if (item.seq === this.last + 1 && !this.reading) {
      this.accept(item);
      return;
    }
    this.ahead.set(item.seq, item);
    this.catchUp();
  }

  resubscribed(): void {
    this.catchUp();
  }

  /**
   * Reads the log from `last` (again if one read is already running, since that one may have
   * been sent before the subscription that now exists) and releases the live events waiting.
   */
  catchUp(): void {
    if (this.ended || this.stopped || this.failure !== undefined) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    void this.readLoop();
  }

  /** Ends the stream now, dropping what is queued (abort, bus closed). */
  stop(): void {
    this.stopped = true;
    this.notify();
  }

  /** The stream's signal aborted (the cursor is its listener): stops. */
  handleEvent(): void {
    this.stop();
  }

  /**
   * Hands `waiter` the next event (`event`), the stream's end (`end`) or what broke it (`fail`):
   * at once when there is one, else from the live message or log read that brings it, in that
   * call (no promise of its own, no loop of wake-ups: the fewer hops per event, the sooner a
   * thousand streams of one run have written it). One waiter at a time.
   */
  wait(waiter: CursorWaiter): void {
    if (this.waiter) {
      waiter.fail(new Error('RunEventCursor.wait() called while another waiter waits'));
      return;
    }
    this.waiter = waiter;
    this.notify();
  }

  /** What a waiter gets now (an event; undefined: the stream is over), FAILED, or WAIT. */
  private take(): SequencedEvent | undefined | typeof FAILED | typeof WAIT {
    if (this.stopped) return undefined;
    const item = this.ready.shift();
    if (item) return item;
    if (this.failure !== undefined) return FAILED;
    if (this.ended) return undefined;
    return WAIT;
  }

  private async readLoop(): Promise<void> {
    try {
      do {
        this.readAgain = false;
        // Every seq waiting in `ahead` now is already in the log, so this read must reach it.
        const mustReach = Math.max(0, ...this.ahead.keys());
        const { events, tail } = await this.readLog(this.last);
        for (const item of events) {
          if (this.ended || this.stopped) return;
          if (item.seq === this.last + 1) this.accept(item);
        }
        this.releaseAhead();
        // Resumed at the terminal event (Last-Event-ID of the last event): nothing follows. A
        // terminal event before the resume point means the log is not the one the client read
        // (Redis restarted empty, and the run's events went on in a new log): it cannot serve
        // this stream, and the run's record in Postgres says how the run ended.
        if (!this.ended && tail && tail.seq === this.last && isTerminalEvent(tail.event)) this.end();
        if (!this.ended && tail && tail.seq < this.last && isTerminalEvent(tail.event)) throw logRestarted(this.runId, tail.seq, this.last);
        if (!this.ended && this.last < mustReach) {
          throw new AppError({
            code: 'unavailable',
            message: `the event log of run ${this.runId} lost events after seq ${this.last} (expired or deleted); read the run's record instead`,
            details: { runId: this.runId, afterSeq: this.last },
          });
        }
        // Live events that arrived during the read and still leave a gap need another read.
      } while (!this.ended && !this.stopped && (this.readAgain || this.ahead.size > 0));
    } catch (err) {
      this.fail(err);
    } finally {
      this.reading = false;
      this.notify();
    }
  }

  private releaseAhead(): void {
    for (const seq of [...this.ahead.keys()]) if (seq <= this.last) this.ahead.delete(seq);
    for (let item = this.ahead.get(this.last + 1); item && !this.ended; item = this.ahead.get(this.last + 1)) {
      this.ahead.delete(item.seq);
      this.accept(item);
    }
  }

  private accept(item: SequencedEvent): void {
    this.ready.push(item);
    this.last = item.seq;
    if (isTerminalEvent(item.event)) this.end();
    else this.notify();
  }

  private end(): void {
    this.ended = true;
    this.ahead.clear();
    this.notify();
  }

  private fail(err: unknown): void {
    if (this.failure === undefined) this.failure = err;
    this.notify();
  }

  private notify(): void {
    const waiter = this.waiter;
    if (!waiter) return;
    const now = this.take();
    if (now === WAIT) return;
    this.waiter = undefined;
    if (now === FAILED) waiter.fail(this.failure);
    else if (now === undefined) waiter.end();
    else waiter.event(now);
  }
}

/** The log holds a terminal event at `seq`, below the position `last` a stream had reached: it was lost and begun again. */
function logRestarted(runId: string, seq: number, last: number): AppError {
  return new AppError({
    code: 'unavailable',
    message: `the event log of run ${runId} has its terminal event at seq ${seq}, before seq ${last} this stream had reached (it was lost and begun again); read the run's record instead`,
    details: { runId, afterSeq: last },
  });
}
