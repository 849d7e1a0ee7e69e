import type { SequencedEvent } from '../../contract';

/** Who reads a run's log (`RunLogFeed.wait`): told exactly one of these per wait. */
export interface RunLogReader {
  logEvent(item: SequencedEvent): void;
  /** The log is over for this feed: its terminal event given, resumed at it, or stopped. */
  logEnded(): void;
  logFailed(err: unknown): void;
}

/** One read of a run's log: replayed after a seq, then followed live. */
export interface RunLogFeed {
  /**
   * Tells `reader` the next event (in order, each once), the end (after the terminal event, or
   * at once when resumed at it) or what broke the feed: at once when there is one, else when it
   * comes. The first call subscribes. One reader at a time.
   */
  wait(reader: RunLogReader): void;
  /** Ends the feed now; resolves once its subscription is given back. */
  close(): Promise<void>;
}

/** Port: a run's event log (the run event bus). */
export interface RunEventSource {
  /**
   * The run's events with seq > `afterSeq`. `fresh`: the run did not exist when the feed was
   * asked for, so its log is only followed, not read first (a gap still reads it).
   */
  feed(runId: string, options: { afterSeq: number; fresh?: boolean }): RunLogFeed;
  /** Seq of the run's last logged event; 0 when its log never existed or has expired. */
  lastSeq(runId: string): Promise<number>;
}
