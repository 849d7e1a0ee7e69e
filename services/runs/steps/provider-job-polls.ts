/** How finely polls are placed on the shared timer: a poll is due at most this late. */
const GRAIN_MS = 25;
/** How long a wake-up that found no one waiting is kept for the job's next wait (its step was between polls). */
const EARLY_WAKE_KEPT_MS = 60_000;

interface Waiter {
  key: string;
  slot: number;
  resolve(): void;
  reject(reason: unknown): void;
  signal: AbortSignal;
  onAbort(): void;
}

/**
 * The polls of one worker process' parked provider jobs (fal requests, Replicate predictions) on
 * one timer: a job waiting for its next poll costs an entry in a map, not a timer of its own, and
 * the timer is armed only while some job waits, for the earliest one. A provider's webhook saying
 * a job ended (`wake`) brings its poll forward to now; one that arrives while the job's step is
 * between waits is kept for its next wait, so an early answer is never slept through.
 */
export class ProviderJobPolls {
  /** Waiters by the timer slot (GRAIN_MS each) their poll is due in. */
  private readonly slots = new Map<number, Set<Waiter>>();
  private readonly byKey = new Map<string, Set<Waiter>>();
  /** Jobs woken while no one waited on them, with when. */
  private readonly early = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  /** Polls brought forward by a webhook, since the process started. */
  woken = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Jobs waiting for their next poll. */
  get waiting(): number {
    let n = 0;
    for (const set of this.byKey.values()) n += set.size;
    return n;
  }

  /** Whether the shared timer is armed (it is only while some job waits). */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  /**
   * Waits `ms` before the next poll of the job `key`, or less when a webhook says it ended;
   * rejects with the signal's reason when it aborts.
   */
  wait(key: string, ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const wokenAt = this.early.get(key);
    if (wokenAt !== undefined) {
      this.early.delete(key);
      if (this.now() - wokenAt <= EARLY_WAKE_KEPT_MS) return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const slot = Math.ceil((this.now() + ms) / GRAIN_MS);
      const waiter: Waiter = { key, slot, resolve, reject, signal, onAbort: () => this.settle(waiter, signal.reason) };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.add(this.slots, slot, waiter);
      this.add(this.byKey, key, waiter);
      this.arm(slot);
    });
  }

  /** A provider says the job `key` ended: its waits end now (or its next one does, when none waits). */
  wake(key: string): void {
    const waiters = this.byKey.get(key);
    this.woken++;
    if (!waiters || waiters.size === 0) {
      this.pruneEarly();
      this.early.set(key, this.now());
      return;
    }
    for (const waiter of [...waiters]) this.settle(waiter);
  }

  private add<K>(map: Map<K, Set<Waiter>>, key: K, waiter: Waiter): void {
    const set = map.get(key);
    if (set) set.add(waiter);
    else map.set(key, new Set([waiter]));
  }

  private remove<K>(map: Map<K, Set<Waiter>>, key: K, waiter: Waiter): void {
    const set = map.get(key);
    if (!set) return;
    set.delete(waiter);
    if (set.size === 0) map.delete(key);
  }

  /** Ends one wait: resolved, or rejected with `reason`. */
  private settle(waiter: Waiter, ...reason: [] | [unknown]): void {
    this.remove(this.slots, waiter.slot, waiter);
    this.remove(this.byKey, waiter.key, waiter);
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    if (reason.length === 0) waiter.resolve();
    else waiter.reject(reason[0]);
    if (this.slots.size === 0) this.disarm();
  }

  private arm(slot: number): void {
    if (slot >= this.armedFor) return;
    this.disarm();
    this.armedFor = slot;
    this.timer = setTimeout(() => this.tick(), Math.max(0, slot * GRAIN_MS - this.now()));
    // A parked job keeps its step's promise, not the process, alive.
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }

  private tick(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const current = Math.floor(this.now() / GRAIN_MS);
    let next = Infinity;
    for (const [slot, waiters] of [...this.slots]) {
      if (slot <= current) for (const waiter of [...waiters]) this.settle(waiter);
      else next = Math.min(next, slot);
    }
    if (next !== Infinity) this.arm(next);
  }

  private pruneEarly(): void {
    if (this.early.size < 1000) return;
    const stale = this.now() - EARLY_WAKE_KEPT_MS;
    for (const [key, at] of this.early) if (at < stale) this.early.delete(key);
  }
}
