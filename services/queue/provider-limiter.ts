import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KeyQueue, type KeyQueueDeps, type Waiter } from './provider-limit-queue';
import { ProviderLimitStore, type NewTicket } from './provider-limit-store';
import type { BlockedBy, LimitGrant, LimitRequest, LimitSnapshot, ProviderLimit, ProviderLimiterOptions } from './provider-limit-types';
import { ProviderPauseCache } from './provider-pause-cache';
import { withTimeout } from './redis-script';

export type { LimitGrant, LimitRequest, LimitSnapshot, ProviderLimit, ProviderLimiterOptions } from './provider-limit-types';

const NO_GRANT: LimitGrant = { release: () => undefined };

/** How long close() waits for Redis at most, per call. */
const CLOSE_TIMEOUT_MS = 1000;

/** A granted ticket that holds a call slot, until released. */
interface Held {
  queue: KeyQueue;
  ticket: NewTicket;
}

/**
 * The providers' rate and concurrency limits, shared by every worker process through Redis
 * (docs in scripts/includes/provider-limit.lua): a request waits its turn in a queue per limit
 * key where organizations take turns, then takes one request, its worst-case tokens and perhaps a
 * call slot from budgets every process draws on. Waiting is a promise; each key with waiters has
 * one loop in this process, sleeping until the next grant can come or until another process
 * announces a grant for it (a subscriber connection, duplicated from `redis`). Call slots and
 * this process's alive marks are renewed every leaseMs/3 in one call while it holds or waits.
 */
export class ProviderLimiter {
  private readonly process = randomUUID().replace(/-/g, '').slice(0, 16);
  private readonly leaseMs: number;
  private readonly store: ProviderLimitStore;
  private readonly pauses: ProviderPauseCache;
  private readonly queues = new Map<string, KeyQueue>();
  private readonly byBase = new Map<string, KeyQueue>();
  private readonly held = new Map<string, Held>();
  private subscriber: Redis | undefined;
  /** Keys with limits stated by the operator (others get a queue once a pace is learnt from their 429s). */
  private readonly stated = new Set<string>();
  private readonly deps: KeyQueueDeps;
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private sequence = 0;
  private closed = false;

  constructor(private readonly options: ProviderLimiterOptions) {
    this.leaseMs = options.leaseMs ?? 30_000;
    this.store = new ProviderLimitStore(options.redis, options.prefix, this.process, this.leaseMs);
    this.pauses = new ProviderPauseCache(this.store, options.log);
    const deps = (this.deps = {
      store: this.store,
      log: options.log,
      retryMs: options.retryMs ?? 250,
      refund: (queue: KeyQueue, ticket: NewTicket) => this.giveBack(queue, ticket, ticket.tokens, true),
      renewNow: () => this.renew(),
    });
    for (const limit of options.limits) {
      const full: Required<ProviderLimit> = { requestsPerMinute: 0, tokensPerMinute: 0, concurrentCalls: 0, ...limit };
      if (full.requestsPerMinute <= 0 && full.tokensPerMinute <= 0 && full.concurrentCalls <= 0) continue;
      this.stated.add(limit.key);
      this.addQueue(new KeyQueue(full, deps));
    }
  }

  private addQueue(queue: KeyQueue): KeyQueue {
    this.queues.set(queue.limit.key, queue);
    this.byBase.set(queue.base, queue);
    this.subscriber ??= this.subscribe();
    return queue;
  }

  /** The queue of a key without stated limits whose provider answered 429: its requests go at the pace learnt (includes/provider-limit.lua). */
  private learntQueue(key: string): KeyQueue {
    return this.queues.get(key) ?? this.addQueue(new KeyQueue({ key, requestsPerMinute: 0, tokensPerMinute: 0, concurrentCalls: 0 }, this.deps));
  }

  /** Forgets an idle queue of a learnt pace that lapsed (it holds no leases: a learnt pace limits requests only). */
  private dropLearntQueue(queue: KeyQueue): void {
    this.queues.delete(queue.limit.key);
    this.byBase.delete(queue.base);
    void queue.close(new Error('the learnt pace lapsed'), (p) => p);
  }

  /** Whether `key` has a configured limit. */
  has(key: string): boolean {
    return this.stated.has(key);
  }

  /**
   * Waits for the request's turn under `key`'s limits, then takes one request, its tokens and
   * (when `lease`) a concurrent-call slot. A key without configured limits resolves at once,
   * unless the fleet is paused for it. Rejects with `signal.reason` when the signal aborts first
   * (its place in the queue withdrawn, nothing taken).
   */
  async acquire(request: LimitRequest): Promise<LimitGrant> {
    const { signal } = request;
    if (this.closed) throw new Error('the provider limiter is closed');
    signal.throwIfAborted();
    let queue = this.queues.get(request.key);
    if (!queue || !this.stated.has(request.key)) {
      // A key without stated limits: its pause waited out, unless a pace learnt from its 429s is in force.
      const seen = await this.pauses.read(request.key);
      if (!seen.learnt) {
        // The pace lapsed: its queue goes once idle, so the key's requests stop paying a Redis round trip each.
        if (queue && queue.waiters.size === 0 && !queue.waiting) this.dropLearntQueue(queue);
        return this.afterPause(request);
      }
      queue = this.learntQueue(request.key);
    }
    const enqueuedAt = Date.now();
    return new Promise<LimitGrant>((resolve, reject) => {
      const ticket: NewTicket = {
        id: `${this.process}.${(this.sequence++).toString(36)}`,
        org: request.org,
        tokens: queue.limit.tokensPerMinute > 0 ? Math.max(0, Math.ceil(request.tokens)) : 0,
        lease: request.lease && queue.limit.concurrentCalls > 0,
      };
      const onAbort = () => {
        queue.withdraw(ticket.id);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        ...ticket,
        enqueuedAt,
        registered: false,
        granted: () => {
          signal.removeEventListener('abort', onAbort);
          this.options.observer?.waited(request.key, Date.now() - enqueuedAt);
          resolve(this.grantOf(queue, ticket));
        },
        failed: (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      queue.add(waiter);
      this.keepRenewing();
    });
  }

  /**
   * The provider told us to slow down: every process waits for `key` until `untilMs` (epoch ms).
   * Works for keys with or without configured limits. `learn` (a 429): the fleet also learns the
   * provider's pace from it (`answeredPerMinute`: what this process saw answered in the last
   * second, a minute's worth), and its requests go through the key's queue at that pace.
   */
  async pause(key: string, untilMs: number, learn?: { answeredPerMinute: number }): Promise<void> {
    this.pauses.note(key, untilMs);
    try {
      const stored = await this.store.pause(key, untilMs, learn);
      this.pauses.note(key, stored.untilMs, stored.learnt);
    } catch (err) {
      this.options.log.warn({ err, key }, 'provider limiter: storing a pause failed; only this process knows of it');
    }
    if (learn && !this.closed) this.learntQueue(key);
    this.queues.get(key)?.poke();
  }

  /** Per key with a configured limit or a pause seen: this process's view (no Redis call). */
  snapshot(): LimitSnapshot[] {
    const now = Date.now();
    const inFlight = new Map<string, number>();
    for (const { queue } of this.held.values()) inFlight.set(queue.limit.key, (inFlight.get(queue.limit.key) ?? 0) + 1);
    const out = [...this.queues.values()].map((q) => q.snapshot(inFlight.get(q.limit.key) ?? 0, now));
    for (const [key, untilMs] of this.pauses.entries()) {
      const limited = out.find((s) => s.key === key);
      if (limited) {
        if (untilMs > now && limited.blockedBy === null) limited.blockedBy = 'paused';
        continue;
      }
      out.push({ key, waiting: 0, oldestWaitMs: 0, inFlight: 0, remaining: { requests: null, tokens: null, calls: null }, blockedBy: untilMs > now ? 'paused' : null });
    }
    return out;
  }

  /** An organization's requests waiting under each key with limits, across all processes, and what blocks the head. One Redis round trip. */
  waitingOf(org: string): Promise<{ key: string; waiting: number; blockedBy: BlockedBy }[]> {
    return this.store.waiting(org, [...this.queues.keys()]);
  }

  /** Withdraws this process's waiting requests (they reject with an Error) and stops its timers; leases it holds are released. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    const within = <T>(p: Promise<T>) => withTimeout(p, CLOSE_TIMEOUT_MS, 'provider limiter close');
    const reason = new Error('the provider limiter closed');
    await Promise.all([...this.queues.values()].map((q) => q.close(reason, within)));
    const held = [...this.held.values()];
    this.held.clear();
    await Promise.all(
      held.map(({ queue, ticket }) =>
        within(this.store.release(queue.limit, ticket.id, true, 0, false)).catch((err: unknown) => this.options.log.warn({ err, key: queue.limit.key }, 'provider limiter: releasing a slot on close failed (it expires)')),
      ),
    );
    this.subscriber?.disconnect();
  }

  /** Waits out a pause of a key without limits (read at most once a second); nothing else to take. */
  private async afterPause({ key, signal }: LimitRequest): Promise<LimitGrant> {
    const started = Date.now();
    for (;;) {
      const left = (await this.pauses.read(key)).untilMs - Date.now();
      signal.throwIfAborted();
      if (left <= 0) break;
      await abortableSleep(Math.min(left, 1000), signal);
    }
    const waited = Date.now() - started;
    if (waited > 0) this.options.observer?.waited(key, waited);
    return NO_GRANT;
  }

  private grantOf(queue: KeyQueue, ticket: NewTicket): LimitGrant {
    if (ticket.lease) this.held.set(ticket.id, { queue, ticket });
    let released = false;
    return {
      release: (usedTokens?: number) => {
        if (released) return;
        released = true;
        const lease = this.held.delete(ticket.id);
        const back = usedTokens === undefined ? 0 : Math.max(0, ticket.tokens - usedTokens);
        if (lease || back > 0) this.giveBack(queue, { ...ticket, lease }, back, false);
      },
    };
  }

  private giveBack(queue: KeyQueue, ticket: NewTicket, tokens: number, request: boolean): void {
    if (this.closed) return;
    this.store.release(queue.limit, ticket.id, ticket.lease, tokens, request).catch((err: unknown) => {
      this.options.log.warn({ err, key: queue.limit.key }, 'provider limiter: a release failed (its slot expires after leaseMs)');
    });
  }

  private subscribe(): Redis {
    const subscriber = this.options.redis.duplicate();
    subscriber.on('error', (err: Error) => this.options.log.warn({ err }, 'provider limiter: the grants subscriber failed'));
    subscriber.on('message', (_channel: string, base: string) => this.byBase.get(base)?.poke());
    // Back after a disconnect: a grant announced meanwhile was missed; each queue with waiters looks.
    subscriber.on('ready', () => {
      for (const queue of this.queues.values()) if (queue.waiters.size > 0) queue.poke();
    });
    subscriber.subscribe(this.store.channel).catch((err: unknown) => this.options.log.warn({ err }, 'provider limiter: subscribing failed'));
    return subscriber;
  }

  /** Starts the renewal timer unless it runs; it stops itself when nothing is held or waiting. */
  private keepRenewing(): void {
    if (this.renewTimer || this.closed) return;
    this.renewTimer = setInterval(() => void this.renew(), Math.max(10, Math.floor(this.leaseMs / 3)));
    this.renewTimer.unref();
  }

  /** One call renewing every slot held and every alive mark where this process waits; queues whose tickets were lost queue them again. */
  private renew(): Promise<void> {
    if (this.renewing) return this.renewing;
    const groups = [...this.queues.values()]
      .map((queue) => ({ base: queue.base, waiting: queue.waiting, leases: [...this.held].filter(([, h]) => h.queue === queue).map(([id]) => id) }))
      .filter((g) => g.waiting || g.leases.length > 0);
    if (groups.length === 0) {
      if ([...this.queues.values()].every((q) => q.waiters.size === 0)) {
        clearInterval(this.renewTimer);
        this.renewTimer = undefined;
      }
      return Promise.resolve();
    }
    this.renewing = this.store
      .renew(groups)
      .then((lost) => {
        for (const base of lost) this.byBase.get(base)?.lost();
      })
      .catch((err: unknown) => this.options.log.warn({ err }, 'provider limiter: renewing slots failed; trying again at the next renewal'))
      .finally(() => {
        this.renewing = undefined;
      });
    return this.renewing;
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
