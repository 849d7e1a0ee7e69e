import type { CursorWaiter, RunEventCursor } from './run-event-cursor';
import type { SequencedEvent } from './sequenced-event';

/** How one feed's channel subscription is taken and given back. */
export interface RunEventSubscription {
  /** Subscribes the run's channel for the cursor; resolves once Redis has answered. */
  open(): Promise<void>;
  /** Gives the subscription back (and forgets the cursor); never throws. */
  close(): Promise<void>;
}

/** Who reads a feed (`RunLogFeed.wait`): told exactly one of these per wait. */
export interface RunLogReader {
  logEvent(item: SequencedEvent): void;
  /** The log is over for this feed (its terminal event given, resumed at it, or stopped). */
  logEnded(): void;
  logFailed(err: unknown): void;
}

/**
 * One stream's read of a run's log in Redis (`RunEventBus.feed`): its cursor, which merges the
 * log with the live channel, and the channel subscription the cursor needs. Not an iterator: its
 * reader is called with each event in the turn the event comes, so the one iteration a client's
 * stream goes through is the reader's own (docs/performance/streams.md counts the hops).
 *
 * The subscription is taken by the first `wait` and given back when the feed is over (terminal
 * event, failure, `close`, the cursor stopped by an abort or the bus closing); the reader learns
 * the end or the failure only once it is given back.
 */
export class RunLogFeed implements CursorWaiter {
  private opened = false;
  private released: Promise<void> | undefined;
  /** The reader waiting, told by the cursor through the `CursorWaiter` methods. */
  private reader: RunLogReader | undefined;

  /**
   * `failure`: what the first `wait` is told instead of opening (bad arguments, no subscriber);
   * `fresh`: the log is not read once subscribed (`RunLogFeedOptions.fresh`).
   */
  constructor(
    private readonly cursor: RunEventCursor | undefined,
    private readonly subscription: RunEventSubscription | undefined,
    private failure?: unknown,
    private readonly fresh = false,
  ) {}

  /** Tells `reader` the next event, the end or the failure: at once when there is one. One reader at a time. */
  wait(reader: RunLogReader): void {
    if (this.failure !== undefined) {
      const failure = this.failure;
      this.failure = undefined;
      this.released = Promise.resolve();
      reader.logFailed(failure);
      return;
    }
    const { cursor } = this;
    if (!cursor || this.released) {
      reader.logEnded();
      return;
    }
    if (this.reader) {
      reader.logFailed(new Error('RunLogFeed.wait() called while another reader waits'));
      return;
    }
    this.reader = reader;
    if (this.opened) cursor.wait(this);
    else void this.open(cursor);
  }

  /** Ends the feed now; a waiting reader is told the end. Resolves once the subscription is given back. */
  close(): Promise<void> {
    this.failure = undefined;
    this.cursor?.stop();
    return this.release();
  }

  /** The cursor's next event (CursorWaiter). */
  event(item: SequencedEvent): void {
    const { reader } = this;
    this.reader = undefined;
    reader?.logEvent(item);
  }

  /** The cursor's end (CursorWaiter). */
  end(): void {
    const { reader } = this;
    this.reader = undefined;
    void this.release().then(() => reader?.logEnded());
  }

  /** What broke the cursor (CursorWaiter). */
  fail(err: unknown): void {
    const { reader } = this;
    this.reader = undefined;
    void this.release().then(() => reader?.logFailed(err));
  }

  private async open(cursor: RunEventCursor): Promise<void> {
    this.opened = true;
    try {
      // Subscribed before the first log read: an event appended in between is then both in the
      // log and on the channel, and the cursor drops the second copy by its seq.
      await this.subscription?.open();
    } catch (err) {
      this.fail(err);
      return;
    }
    if (!this.fresh) cursor.catchUp();
    cursor.wait(this);
  }

  private release(): Promise<void> {
    this.released ??= this.subscription?.close() ?? Promise.resolve();
    return this.released;
  }
}
