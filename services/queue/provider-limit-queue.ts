import type { Logger } from '../platform/logger';
import type { NewTicket, ProviderLimitStore } from './provider-limit-store';
import type { BlockedBy, LimitSnapshot, ProviderLimit } from './provider-limit-types';

/** A request of this process waiting for its turn. */
export interface Waiter extends NewTicket {
  enqueuedAt: number;
  /** Sent to Redis (as far as this process knows). */
  registered: boolean;
  /** Sent to Redis at least once: an abort withdraws it there, whether or not it is known to be queued. */
  sent?: boolean;
  granted(): void;
  failed(err: Error): void;
}

/** What a queue is built with. */
export interface KeyQueueDeps {
  store: ProviderLimitStore;
  log: Logger;
  retryMs: number;
  /** Gives back what a ticket granted after its request went away holds. */
  refund(queue: KeyQueue, ticket: NewTicket): void;
  /** This process's tickets here were lost: renew its slots now (before they are queued again). */
  renewNow(): Promise<void>;
}

/** The longest a loop sleeps with waiters: a grant announced while the subscriber was down is still collected. */
const MAX_SLEEP_MS = 1000;

/**
 * One limit key's waiting requests in this process, and the one loop that takes their turns:
 * each pass is one script call that withdraws the aborted, queues the new (all those of the tick
 * in one call), grants what the budgets allow and collects this process's grants; then it sleeps
 * for the time the script says the next grant can come, or until woken (a new request, an abort,
 * a grant announced by another process). It runs only while something waits.
 */
export class KeyQueue {
  readonly waiters = new Map<string, Waiter>();
  readonly base: string;
  /** Tickets aborted after they were sent: withdrawn by the next pass (refunded if granted meanwhile). */
  private readonly abandoned = new Map<string, NewTicket>();
  /** Grants the last reply carried, acknowledged with the next call (provider-limit-pump.lua). */
  private received: readonly string[] = [];
  private running = false;
  private again = false;
  private closed = false;
  private wake: (() => void) | undefined;
  private remaining: LimitSnapshot['remaining'];
  private blockedBy: BlockedBy = null;

  constructor(
    readonly limit: Required<ProviderLimit>,
    private readonly deps: KeyQueueDeps,
  ) {
    this.base = deps.store.base(limit.key);
    const of = (n: number) => (n > 0 ? n : null);
    this.remaining = { requests: of(limit.requestsPerMinute), tokens: of(limit.tokensPerMinute), calls: of(limit.concurrentCalls) };
  }

  add(waiter: Waiter): void {
    this.waiters.set(waiter.id, waiter);
    this.poke();
  }

  /** The request went away (aborted): its ticket leaves the queue, nothing is taken. */
  withdraw(id: string): void {
    const waiter = this.waiters.get(id);
    if (!waiter) return;
    this.waiters.delete(id);
    if (waiter.registered || waiter.sent) {
      this.abandoned.set(id, waiter);
      this.poke();
    }
  }

  /** Runs a pass soon (once per tick however often called), or again after the one under way. */
  poke(): void {
    if (this.closed) return;
    this.again = true;
    if (this.running) {
      this.wake?.();
      return;
    }
    this.running = true;
    setImmediate(() => void this.loop());
  }

  /** This process's tickets are unknown to Redis: they are queued again by the next pass. */
  lost(): void {
    for (const waiter of this.waiters.values()) waiter.registered = false;
    this.poke();
  }

  /** Whether this process has tickets in Redis here (its alive mark must be renewed). */
  get waiting(): boolean {
    return this.abandoned.size > 0 || [...this.waiters.values()].some((w) => w.registered);
  }

  snapshot(inFlight: number, now: number): LimitSnapshot {
    let oldest = now;
    for (const waiter of this.waiters.values()) oldest = Math.min(oldest, waiter.enqueuedAt);
    return { key: this.limit.key, waiting: this.waiters.size, oldestWaitMs: now - oldest, inFlight, remaining: { ...this.remaining }, blockedBy: this.blockedBy };
  }

  /** Rejects every waiter with `reason` and withdraws their tickets (one call, bounded by `within`). */
  async close(reason: Error, within: <T>(p: Promise<T>) => Promise<T>): Promise<void> {
    this.closed = true;
    this.wake?.();
    const withdrawn = new Map(this.abandoned);
    for (const waiter of this.waiters.values()) if (waiter.registered || waiter.sent) withdrawn.set(waiter.id, waiter);
    const waiters = [...this.waiters.values()];
    this.waiters.clear();
    for (const waiter of waiters) waiter.failed(reason);
    if (withdrawn.size === 0) return;
    try {
      const reply = await within(this.deps.store.pump(this.limit, 0, [...withdrawn.keys()], this.received, []));
      if (!reply.lost) for (const id of reply.granted) this.refundIfAbandoned(id, withdrawn);
    } catch (err) {
      this.deps.log.warn({ err, key: this.limit.key }, 'provider limiter: withdrawing tickets on close failed (they are dropped when this process is seen dead)');
    }
  }

  private async loop(): Promise<void> {
    try {
      while (!this.closed && (this.again || this.waiters.size > 0 || this.abandoned.size > 0)) {
        this.again = false;
        const waitMs = await this.pass();
        if (this.closed || this.again || (this.waiters.size === 0 && this.abandoned.size === 0)) continue;
        await this.sleep(Math.max(1, Math.min(waitMs < 0 ? MAX_SLEEP_MS : waitMs, MAX_SLEEP_MS)));
      }
    } finally {
      this.running = false;
    }
  }

  /** One call; answers how long to sleep (ms; -1: as long as allowed). */
  private async pass(): Promise<number> {
    const fresh = [...this.waiters.values()].filter((w) => !w.registered);
    const registered = this.waiters.size - fresh.length + this.abandoned.size;
    const withdrawn = new Map(this.abandoned);
    this.abandoned.clear();
    // Registered before the call: an abort during it must withdraw the ticket.
    for (const waiter of fresh) {
      waiter.registered = true;
      waiter.sent = true;
    }
    try {
      const reply = await this.deps.store.pump(this.limit, registered, [...withdrawn.keys()], this.received, fresh);
      if (reply.lost) {
        this.deps.log.warn({ key: this.limit.key }, 'provider limiter: Redis lost this process\'s tickets (a restart?); queueing them again');
        for (const waiter of this.waiters.values()) waiter.registered = false;
        await this.deps.renewNow();
        this.again = true;
        return 0;
      }
      // Acknowledged with the next call: until then Redis keeps them for us.
      this.received = reply.granted;
      for (const id of reply.granted) {
        const waiter = this.waiters.get(id);
        if (waiter) {
          this.waiters.delete(id);
          waiter.granted();
        } else this.refundIfAbandoned(id, withdrawn);
      }
      this.remaining = reply.remaining;
      this.blockedBy = reply.blockedBy;
      return reply.waitMs;
    } catch (err) {
      // Redis blinked: nothing is lost; the new tickets and withdrawals go again after a pause (a
      // ticket queued by a call whose reply was lost keeps its place; its grants come again, unacknowledged).
      this.deps.log.warn({ err, key: this.limit.key }, 'provider limiter: a turn failed; trying again');
      for (const waiter of fresh) if (this.waiters.has(waiter.id)) waiter.registered = false;
      for (const [id, ticket] of withdrawn) this.abandoned.set(id, ticket);
      await this.sleep(this.deps.retryMs);
      this.again = true;
      return 0;
    }
  }

  private refundIfAbandoned(id: string, withdrawn: ReadonlyMap<string, NewTicket>): void {
    const ticket = withdrawn.get(id);
    if (ticket) this.deps.refund(this, ticket);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
