/**
 * Group commit per key: at most `limit` batches of one key are sent at once; items that arrive
 * while they are out wait in this process, in arrival order, and leave together (up to `maxBatch`)
 * when a place frees. An item that finds a place free leaves at once, alone: no item waits for
 * company. For work that would otherwise queue on one database row per key (a run's creation locks
 * its organization's row): a long queue of waiters on one row in Postgres slows every handoff of
 * its lock (B8 on 16 cores: creations waiting on Lock:tuple), and a batch takes the lock once for
 * all its items.
 */
export class KeyedBatcher<I, O> {
  private readonly keys = new Map<string, { sending: number; waiting: Waiting<I, O>[] }>();

  /**
   * `send(key, items)` answers one settled result per item, in order: a batch may refuse some items
   * and keep others (a rejection of the whole call fails every item of it).
   */
  constructor(
    private readonly limit: number,
    private readonly maxBatch: number,
    private readonly send: (key: string, items: I[]) => Promise<PromiseSettledResult<O>[]>,
  ) {
    for (const [what, n] of [['limit', limit], ['batch size', maxBatch]] as const) {
      if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`a batcher's ${what} must be a positive whole number, got ${n}`);
    }
  }

  /** Sends `item` under `key`, alone or with others of the key, and answers its own result. */
  run(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let entry = this.keys.get(key);
      if (!entry) {
        entry = { sending: 0, waiting: [] };
        this.keys.set(key, entry);
      }
      entry.waiting.push({ item, resolve, reject });
      this.pump(key, entry);
    });
  }

  /** Batches of a key being sent and items waiting (for tests and metrics). */
  load(key: string): { sending: number; waiting: number } {
    const entry = this.keys.get(key);
    return { sending: entry?.sending ?? 0, waiting: entry?.waiting.length ?? 0 };
  }

  private pump(key: string, entry: { sending: number; waiting: Waiting<I, O>[] }): void {
    while (entry.sending < this.limit && entry.waiting.length > 0) {
      const batch = entry.waiting.splice(0, this.maxBatch);
      entry.sending++;
      void this.sendBatch(key, batch).finally(() => {
        entry.sending--;
        if (entry.sending === 0 && entry.waiting.length === 0) this.keys.delete(key);
        else this.pump(key, entry);
      });
    }
  }

  private async sendBatch(key: string, batch: Waiting<I, O>[]): Promise<void> {
    let results: PromiseSettledResult<O>[];
    try {
      results = await this.send(key, batch.map((w) => w.item));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} was answered ${results.length} results`);
    } catch (err) {
      for (const w of batch) w.reject(err);
      return;
    }
    batch.forEach((w, i) => {
      const result = results[i]!;
      if (result.status === 'fulfilled') w.resolve(result.value);
      else w.reject(result.reason);
    });
  }
}

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(reason: unknown): void;
}

/**
 * Sends `items` together with `together`, one result per item; when that fails with an error that
 * one item may have caused (`oneItemsFault`: Postgres refused one run's data, one commit's
 * arithmetic), each item is sent again alone, so that only that item fails, as it would have
 * alone. Any other failure (Postgres unavailable) is every item's.
 */
export async function sendTogether<I, O>(items: I[], together: (items: I[]) => Promise<O[]>, oneItemsFault: (err: unknown) => boolean): Promise<PromiseSettledResult<O>[]> {
  try {
    return (await together(items)).map((value) => ({ status: 'fulfilled', value }));
  } catch (err) {
    if (items.length === 1 || !oneItemsFault(err)) throw err;
  }
  return Promise.allSettled(items.map(async (item) => (await together([item]))[0]!));
}
