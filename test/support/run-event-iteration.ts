import { ITERATION_DONE } from '../../services/platform/iteration-done';
import type { RunEventBus, RunLogFeed, RunLogFeedOptions, RunLogReader, SequencedEvent } from '../../services/queue';

/**
 * A run's events from the bus, iterated: the tests read the bus' feed (`RunEventBus.feed`) this
 * way, as the service's `RunEventStream` reads it by calls. See {@link RunEventIteration}.
 */
export function eventsOf(bus: Pick<RunEventBus, 'feed'>, runId: string, options: RunLogFeedOptions = {}): RunEventIteration {
  return new RunEventIteration(bus.feed(runId, options));
}

/**
 * A feed's events, one `next()` at a time, as an async generator would give them, with one
 * difference that is the reason it is not one:
 * `return()` ends it at once, even while a `next()` waits for the run's next event (a
 * generator's `return()` would wait behind that `next()`, possibly for ever). A stream can so be
 * ended by its consumer without an `AbortSignal` of its own.
 *
 * The feed subscribes with the first `next()` and gives its subscription back when the iteration
 * ends; the call that ends it waits for that.
 */
export class RunEventIteration implements AsyncIterableIterator<SequencedEvent>, RunLogReader {
  /** The waiting `next()`'s promise, settled by the feed through the `RunLogReader` methods. */
  private resolve: ((result: IteratorResult<SequencedEvent, undefined>) => void) | undefined;
  private reject: ((err: unknown) => void) | undefined;

  constructor(private readonly feed: RunLogFeed) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SequencedEvent, undefined>> {
    if (this.resolve) return Promise.reject(new Error('RunEventIteration.next() called while another call waits'));
    // The feed settles this promise itself when the event comes: no hop between the two.
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      this.feed.wait(this);
    });
  }

  /** The feed's next event (RunLogReader). */
  logEvent(item: SequencedEvent): void {
    const { resolve } = this;
    this.resolve = this.reject = undefined;
    resolve?.({ value: item, done: false });
  }

  /** The feed's end, its subscription given back (RunLogReader). */
  logEnded(): void {
    const { resolve } = this;
    this.resolve = this.reject = undefined;
    resolve?.(ITERATION_DONE);
  }

  /** What broke the feed, its subscription given back (RunLogReader). */
  logFailed(err: unknown): void {
    const { reject } = this;
    this.resolve = this.reject = undefined;
    reject?.(err);
  }

  async return(): Promise<IteratorResult<SequencedEvent, undefined>> {
    await this.feed.close();
    return ITERATION_DONE;
  }
}
