import type { CursorWaiter, RunEventCursor } from './run-event-cursor';
import type { SequencedEvent } from './sequenced-event';

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/** How one stream of `RunEventBus.events` is opened and given back. */
export interface RunEventSubscription {
  /** Subscribes the run's channel for the cursor; resolves once Redis has answered. */
  open(): Promise<void>;
  /** Gives the subscription back (and forgets the cursor); never throws. */
  close(): Promise<void>;
}

/**
 * The iteration `RunEventBus.events` returns: a cursor's events, one `next()` at a time, as an
 * async generator would give them, with one difference that is the reason it is not one:
 * `return()` ends it at once, even while a `next()` waits for the run's next event (a
 * generator's `return()` would wait behind that `next()`, possibly for ever). A stream can so be
 * ended by its consumer without an `AbortSignal` of its own, and holds no generator either: both
 * cost memory on every open stream (docs/performance/streams.md).
 *
 * The subscription starts with the first `next()` and is released when the iteration ends
 * (terminal event, failure, `return()`, the cursor stopped by an abort or the bus closing); the
 * call that ends it waits for the release.
 */
export class RunEventIterator implements AsyncIterableIterator<SequencedEvent>, CursorWaiter {
  private opened = false;
  private released: Promise<void> | undefined;
  /** The waiting `next()`'s promise, settled by the cursor through the `CursorWaiter` methods. */
  private resolve: ((result: IteratorResult<SequencedEvent, undefined>) => void) | undefined;
  private reject: ((err: unknown) => void) | undefined;

  /**
   * `failure`: what the first `next()` throws instead of opening (bad arguments, no subscriber);
   * `fresh`: the log is not read once subscribed (`RunEventStreamOptions.fresh`).
   */
  constructor(
    private readonly cursor: RunEventCursor | undefined,
    private readonly subscription: RunEventSubscription | undefined,
    private failure?: unknown,
    private readonly fresh = false,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SequencedEvent, undefined>> {
    if (this.failure !== undefined) {
      const failure = this.failure;
      this.failure = undefined;
      this.released = Promise.resolve();
      return Promise.reject(failure);
    }
    const { cursor } = this;
    if (!cursor || this.released) return Promise.resolve(DONE);
    if (!this.opened) return this.open(cursor);
    if (this.resolve) return Promise.reject(new Error('RunEventIterator.next() called while another call waits'));
    // The cursor settles this promise itself when the event comes: no hop between the two.
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      cursor.wait(this);
    });
  }

  /** The cursor's next event (CursorWaiter). */
  event(item: SequencedEvent): void {
    const { resolve } = this;
    this.resolve = this.reject = undefined;
    resolve?.({ value: item, done: false });
  }

  /** The cursor's end (CursorWaiter): done once the subscription is given back. */
  end(): void {
    const { resolve } = this;
    this.resolve = this.reject = undefined;
    void this.release().then(() => resolve?.(DONE));
  }

  /** What broke the cursor (CursorWaiter): thrown once the subscription is given back. */
  fail(err: unknown): void {
    const { reject } = this;
    this.resolve = this.reject = undefined;
    void this.release().then(() => reject?.(err));
  }

  async return(): Promise<IteratorResult<SequencedEvent, undefined>> {
    this.failure = undefined;
    this.cursor?.stop();
    await this.release();
    return DONE;
  }

  private async open(cursor: RunEventCursor): Promise<IteratorResult<SequencedEvent, undefined>> {
    this.opened = true;
    try {
      // Subscribed before the first log read: an event appended in between is then both in the
      // log and on the channel, and the cursor drops the second copy by its seq.
      await this.subscription?.open();
    } catch (err) {
      await this.release();
      throw err;
    }
    if (!this.fresh) cursor.catchUp();
    return this.next();
  }

  private release(): Promise<void> {
    this.released ??= this.subscription?.close() ?? Promise.resolve();
    return this.released;
  }
}
