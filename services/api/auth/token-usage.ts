import type { Logger } from '../../platform/logger';

/** Port: records when tokens were used (`TokenRepository.touchLastUsed` satisfies it). */
export interface TokenUsageStore {
  touchLastUsed(ids: readonly string[], at: Date): Promise<number>;
}

/**
 * Coalesces `last_used_at` updates: authentication notes each token it accepts in memory, and
 * one statement per interval writes the batch, so no request pays for a write. A listing shows a
 * time at most one interval old; a stopping process flushes what it holds.
 */
export class TokenUsageRecorder {
  private pending = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly options: { store: TokenUsageStore; intervalMs: number; log: Logger; now?: () => Date }) {
    this.timer = setInterval(() => void this.flush(), options.intervalMs);
    this.timer.unref();
  }

  note(tokenId: string): void {
    this.pending.add(tokenId);
  }

  /** Writes what has been noted since the last flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const ids = [...this.pending];
      this.pending = new Set();
      const at = this.options.now?.() ?? new Date();
      try {
        await this.options.store.touchLastUsed(ids, at);
      } catch (err) {
        // Lost only if the next flush fails too: put them back for it.
        for (const id of ids) this.pending.add(id);
        this.options.log.warn({ err, tokens: ids.length }, 'could not record token use; retrying at the next flush');
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
