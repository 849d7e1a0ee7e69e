/**
 * At most `limit` holders per key at once; the others wait in this process, in arrival order.
 * For work that would otherwise queue on one database row per key (a run's creation locks its
 * organization's row): a long queue of waiters on one row in Postgres slows every lock handoff
 * (B8 on 16 cores: more worker processes made fewer runs per second, creations waiting on
 * Lock:tuple), a queue here costs a promise each.
 */
export class KeyedGate {
  private readonly keys = new Map<string, { holders: number; waiting: (() => void)[] }>();

  constructor(private readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`a gate's limit must be a positive whole number, got ${limit}`);
  }

  /** Runs `work` once fewer than `limit` others hold `key`; the key is let go however it ends. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    await this.enter(key);
    try {
      return await work();
    } finally {
      this.leave(key);
    }
  }

  /** Holders and waiters of a key (for tests and metrics). */
  load(key: string): { holders: number; waiting: number } {
    const entry = this.keys.get(key);
    return { holders: entry?.holders ?? 0, waiting: entry?.waiting.length ?? 0 };
  }

  private enter(key: string): Promise<void> {
    let entry = this.keys.get(key);
    if (!entry) {
      entry = { holders: 0, waiting: [] };
      this.keys.set(key, entry);
    }
    if (entry.holders < this.limit) {
      entry.holders++;
      return Promise.resolve();
    }
    // The leaver hands its place over: the count stays, the first waiter holds it.
    return new Promise((resolve) => entry.waiting.push(resolve));
  }

  private leave(key: string): void {
    const entry = this.keys.get(key)!;
    const next = entry.waiting.shift();
    if (next) return next();
    entry.holders--;
    if (entry.holders === 0) this.keys.delete(key);
  }
}
