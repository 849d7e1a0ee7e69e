import type { Redis } from 'ioredis';

/** Someone in this process who wants the messages of one pub/sub channel (decoded as `M`). */
export interface ChannelListener<M = string> {
  /** One message published on the channel, in publish order. */
  message(message: M): void;
  /**
   * The subscriber connection came back and the channel is subscribed again. Messages published
   * while it was down are lost to pub/sub, so the listener re-reads what it missed.
   */
  resubscribed(): void;
}

interface ChannelEntry<M> {
  listeners: Set<ChannelListener<M>>;
  /** Settles when this entry's SUBSCRIBE has been answered. */
  subscribed: Promise<void>;
}

/**
 * One Redis connection in subscriber mode shared by every listener of the process: a channel
 * is subscribed when its first local listener arrives and unsubscribed when its last leaves.
 *
 * Races are settled by the order of commands on the one connection: Redis answers SUBSCRIBE and
 * UNSUBSCRIBE in the order they were sent, so a channel dropped and wanted again before the
 * UNSUBSCRIBE is answered gets a fresh entry whose SUBSCRIBE is sent after it and wins. The
 * connection must queue commands while it reconnects (ioredis does, with `maxRetriesPerRequest:
 * null` as `createRedisConnection` sets), or the order, and this reasoning, is lost.
 *
 * A message is decoded once (`decode`) and the one result handed to every listener of its
 * channel: a thousand streams of one run cost one `JSON.parse`, not a thousand. Listeners must
 * therefore treat what they get as shared and never change it.
 *
 * Channels left are unsubscribed together, `leaveDelayMs` after the first of them: one UNSUBSCRIBE
 * for every run stream that ended meanwhile instead of one each (a channel per run, so one each
 * was a command per run). Until then Redis still sends their messages, which find no entry and
 * are dropped. A channel wanted again before its UNSUBSCRIBE is sent is taken off that list.
 */
export class ChannelFanout<M = string> {
  private readonly channels = new Map<string, ChannelEntry<M>>();
  /** Channels without listeners whose UNSUBSCRIBE is not sent yet. */
  private readonly leaving = new Set<string>();
  private leaveTimer: NodeJS.Timeout | undefined;
  private readonly leaveDelayMs: number;
  private closed = false;
  private readonly decode: (payload: string) => M;

  /**
   * `decode` turns a payload into what listeners get; the payload itself when left out (then `M`
   * is `string`). `leaveDelayMs` (default 50): how long a channel left stays subscribed, at most,
   * waiting for others to leave with it.
   */
  constructor(
    private readonly subscriber: Redis,
    decode?: (payload: string) => M,
    options: { leaveDelayMs?: number } = {},
  ) {
    this.decode = decode ?? ((payload) => payload as M);
    this.leaveDelayMs = options.leaveDelayMs ?? 50;
    subscriber.on('message', this.onMessage);
    subscriber.on('ready', this.onReady);
  }

  /** Number of channels subscribed for local listeners (for metrics and leak tests). */
  get channelCount(): number {
    return this.channels.size;
  }

  /** Number of local listeners over all channels. */
  get listenerCount(): number {
    let count = 0;
    for (const entry of this.channels.values()) count += entry.listeners.size;
    return count;
  }

  /** Adds a listener; resolves once the channel is subscribed, so nothing published later is missed. */
  async add(channel: string, listener: ChannelListener<M>): Promise<void> {
    if (this.closed) throw new Error('the channel fan-out is closed');
    let entry = this.channels.get(channel);
    if (!entry) {
      // Still subscribed, its UNSUBSCRIBE not sent: that must not be sent after this SUBSCRIBE.
      this.leaving.delete(channel);
      const created: ChannelEntry<M> = { listeners: new Set(), subscribed: Promise.resolve() };
      created.subscribed = this.subscriber.subscribe(channel).then(
        () => undefined,
        (err: unknown) => {
          // A failed SUBSCRIBE must not be cached for later listeners of the channel.
          if (this.channels.get(channel) === created) this.channels.delete(channel);
          throw err;
        },
      );
      entry = created;
      this.channels.set(channel, entry);
    }
    entry.listeners.add(listener);
    await entry.subscribed;
  }

  /**
   * Removes a listener; when it was the channel's last, the channel stops getting messages here
   * at once and is unsubscribed with the next batch (within `leaveDelayMs`). Never throws.
   */
  remove(channel: string, listener: ChannelListener<M>): Promise<void> {
    const entry = this.channels.get(channel);
    if (!entry || !entry.listeners.delete(listener) || entry.listeners.size > 0) return Promise.resolve();
    this.channels.delete(channel);
    if (this.closed) return Promise.resolve();
    this.leaving.add(channel);
    this.leaveTimer ??= setTimeout(this.leave, this.leaveDelayMs);
    return Promise.resolve();
  }

  /** Unsubscribes every channel and detaches from the connection (which stays the caller's). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.leaveTimer);
    this.subscriber.off('message', this.onMessage);
    this.subscriber.off('ready', this.onReady);
    const channels = [...this.channels.keys(), ...this.leaving];
    this.channels.clear();
    this.leaving.clear();
    if (channels.length > 0 && this.subscriber.status !== 'end') {
      await this.subscriber.unsubscribe(...channels).catch(() => undefined);
    }
  }

  /** Sends the UNSUBSCRIBE of the channels left since the last one. */
  private readonly leave = (): void => {
    this.leaveTimer = undefined;
    const channels = [...this.leaving];
    this.leaving.clear();
    // With commands queued across reconnects this fails only once the connection has ended,
    // and then there is no subscription left to release.
    if (channels.length > 0) this.subscriber.unsubscribe(...channels).catch(() => undefined);
  };

  private readonly onMessage = (channel: string, payload: string): void => {
    const entry = this.channels.get(channel);
    if (!entry) return;
    const message = this.decode(payload);
    // A copy: a listener may leave (and another join) while we iterate.
    for (const listener of [...entry.listeners]) listener.message(message);
  };

  /**
   * ioredis emits `ready` before it replays its own subscriptions, so we send our own SUBSCRIBE
   * for every wanted channel (a no-op where already subscribed) and start the catch-up only
   * once Redis has answered it: a log read before that could miss an event published between
   * the read and the subscription.
   */
  private readonly onReady = (): void => {
    const channels = [...this.channels.keys()];
    if (channels.length === 0) return;
    this.subscriber.subscribe(...channels).then(
      () => {
        for (const channel of channels) {
          const entry = this.channels.get(channel);
          if (entry) for (const listener of [...entry.listeners]) listener.resubscribed();
        }
      },
      // The connection dropped again: the next `ready` repeats all of this.
      () => undefined,
    );
  };
}
