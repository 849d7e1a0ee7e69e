import type { Redis } from 'ioredis';
import type { RunEvent } from '../contract';
import { appendRunEventScript } from './append-run-event-script';
import { ChannelFanout } from './channel-fanout';
import { RunEventCursor, type RunLogRead } from './run-event-cursor';
import { DEFAULT_LOG_TTL_SECONDS, type RunEventBusOptions, type RunLogFeedOptions } from './run-event-bus-options';
import { RunLogFeed } from './run-log-feed';
import { runEventKeys, runStartedJson } from './run-event-keys';
import { decodeSequencedEvent, parseSequencedEvent, type SequencedEvent } from './sequenced-event';

/**
 * The run event bus: every state change of a run is appended here, by any number of worker
 * processes, and streamed to whichever API process holds the client's SSE response.
 *
 * Each run has a replay log (a Redis list, index i = seq i + 1, expiring `logTtlSeconds` after
 * its last append) and a live pub/sub channel. `append` numbers, logs and publishes an event in
 * one Lua script. `feed` subscribes first, then reads the log, then follows live messages,
 * filling any gap from the log, so a stream sees every event once, in order.
 *
 * Expired or unknown logs: `feed` cannot tell "not started yet" from "expired", so it waits
 * for live events in both cases (a new run's stream may well open before its first append).
 * Callers resuming an old run check `lastSeq(runId)` first: 0 means no log, and the run's
 * record in Postgres is the answer. A log that loses events under a live stream (deleted, or
 * expired mid-run) makes the stream throw an `AppError` with code `unavailable`. A run that
 * appends again after its log expired starts a new log (its `run.started` at seq 1, then the
 * event); with a 24 h expiry no live run gets there.
 *
 * One bus per process: it owns the process's subscriber connection.
 */
export class RunEventBus {
  private readonly redis: Redis;
  private readonly fanout: ChannelFanout<SequencedEvent | Error> | undefined;
  private readonly prefix: string;
  private readonly logTtlSeconds: number;
  private readonly cursors = new Set<RunEventCursor>();
  private closed = false;

  constructor(options: RunEventBusOptions) {
    const ttl = options.logTtlSeconds ?? DEFAULT_LOG_TTL_SECONDS;
    if (!Number.isInteger(ttl) || ttl < 1) throw new RangeError(`logTtlSeconds must be a positive integer, got ${ttl}`);
    if (!options.prefix) throw new RangeError('prefix must not be empty');
    this.redis = options.redis;
    this.fanout = options.subscriber ? new ChannelFanout(options.subscriber, decodeSequencedEvent) : undefined;
    this.prefix = options.prefix;
    this.logTtlSeconds = ttl;
  }

  /**
   * Appends an event to a run and publishes it; resolves to its seq (1 for the run's first).
   * `run.started` opens the log and is only ever its first event: appended to a log that has
   * one already, it adds nothing (see `runStartedJson`).
   */
  async append(runId: string, event: RunEvent): Promise<number> {
    return this.appendAll(runId, [event]);
  }

  /** Appends events to a run in one round trip, consecutively numbered; resolves to the last one's seq. */
  async appendAll(runId: string, events: readonly RunEvent[]): Promise<number> {
    if (this.closed) throw new Error('the run event bus is closed');
    if (events.length === 0) throw new RangeError('appendAll needs at least one event');
    const { log, channel } = runEventKeys(this.prefix, runId);
    const first = events[0]!;
    const rest = first.type === 'run.started' && first.runId === runId ? events.slice(1) : events;
    return appendRunEventScript(this.redis, log, channel, runStartedJson(runId), rest.map((event) => JSON.stringify(event)), this.logTtlSeconds);
  }

  /**
   * Every event of the run with seq > `afterSeq`, in seq order and each once, told to a reader
   * (`RunLogFeed.wait`): first from the log, then live; ends after the terminal event
   * (`run.completed`, `run.failed`), when `signal` aborts, when the feed is closed, or when the
   * bus closes. Resumed at the terminal event, it ends at once; resumed past it (the log was lost
   * and begun again under the stream's feet), it fails as `unavailable`: the run's record has the
   * ending. The subscription starts with the first `wait`: the log replay makes subscribing
   * before the run's first append unnecessary. It is released when the feed ends: no message
   * reaches the reader after that, and the channel is unsubscribed within 50 ms, together with
   * the others left meanwhile (`ChannelFanout`). The API's `RunEventStream` is its reader. Bad
   * arguments or a bus without a subscriber connection are told to the first `wait`.
   */
  feed(runId: string, options: RunLogFeedOptions = {}): RunLogFeed {
    const { afterSeq = 0, signal, fresh = false } = options;
    const fanout = this.fanout;
    if (!fanout) return new RunLogFeed(undefined, undefined, new Error('this run event bus has no subscriber connection'));
    if (!Number.isInteger(afterSeq) || afterSeq < 0) return new RunLogFeed(undefined, undefined, new RangeError(`afterSeq must be a non-negative integer, got ${afterSeq}`));
    if (this.closed || signal?.aborted) return new RunLogFeed(undefined, undefined);
    const { channel } = runEventKeys(this.prefix, runId);
    const cursor = new RunEventCursor(runId, afterSeq, (after) => this.readWithTail(runId, after));
    // The cursor is the abort listener itself (handleEvent): no closure per stream.
    signal?.addEventListener('abort', cursor, { once: true });
    const { cursors } = this;
    cursors.add(cursor);
    // Methods, not arrows bound to properties: tsx names those, and a named closure carries a
    // property dictionary (about 256 bytes) for as long as the stream is open.
    return new RunLogFeed(cursor, {
      open() {
        return fanout.add(channel, cursor);
      },
      close() {
        signal?.removeEventListener('abort', cursor);
        cursors.delete(cursor);
        return fanout.remove(channel, cursor);
      },
    }, undefined, fresh);
  }

  /** The run's logged events with seq > `afterSeq`, oldest first (empty when there is no log). */
  async read(runId: string, afterSeq = 0): Promise<SequencedEvent[]> {
    const { log } = runEventKeys(this.prefix, runId);
    // Index i holds seq i + 1, so the entries after `afterSeq` start at index `afterSeq`.
    const entries = await this.redis.lrange(log, afterSeq, -1);
    return entries.map(parseSequencedEvent).filter((item) => item.seq > afterSeq);
  }

  private async readWithTail(runId: string, afterSeq: number): Promise<RunLogRead> {
    const { log } = runEventKeys(this.prefix, runId);
    // One MULTI, so the tail is the last of the range whenever the range is not empty.
    const replies = await this.redis.multi().lrange(log, afterSeq, -1).lindex(log, -1).exec();
    if (!replies) throw new Error('the log read was aborted');
    const [[rangeError, range], [tailError, tail]] = replies as [[Error | null, string[]], [Error | null, string | null]];
    if (rangeError) throw rangeError;
    if (tailError) throw tailError;
    return {
      events: range.map(parseSequencedEvent).filter((item) => item.seq > afterSeq),
      tail: tail === null ? undefined : parseSequencedEvent(tail),
    };
  }

  /** Seq of the run's last logged event; 0 when its log never existed or has expired. */
  async lastSeq(runId: string): Promise<number> {
    return this.redis.llen(runEventKeys(this.prefix, runId).log);
  }

  /** Counters for metrics and leak checks: live streams, channels subscribed, listeners. */
  stats(): { streams: number; channels: number; listeners: number } {
    return { streams: this.cursors.size, channels: this.fanout?.channelCount ?? 0, listeners: this.fanout?.listenerCount ?? 0 };
  }

  /**
   * Ends every stream (their loops finish without error), unsubscribes every channel and
   * detaches from the connections. The connections themselves stay open: they are the caller's.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const cursor of this.cursors) cursor.stop();
    this.cursors.clear();
    await this.fanout?.close();
  }
}
