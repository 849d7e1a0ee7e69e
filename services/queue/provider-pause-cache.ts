import type { Logger } from '../platform/logger';
import type { ProviderLimitStore } from './provider-limit-store';
import { withTimeout } from './redis-script';

/** How long a key's pause read from Redis is trusted. */
const REFRESH_MS = 1000;

interface Seen {
  untilMs: number;
  /** A pace learnt from the provider's 429s is in force: requests go through the key's queue. */
  learnt: boolean;
  readAt: number;
  reading?: Promise<Seen>;
}

/**
 * The providers' pauses as this process knows them, for keys without configured limits (the
 * limited keys' script reads the pause itself): read from Redis at most once a second per key,
 * and only when a request for that key arrives, so an idle key costs nothing and a busy one one
 * read a second. A read that fails lets the request through (fail open): a pause is advice from
 * the provider, and Redis being down must not stop every call.
 */
export class ProviderPauseCache {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly store: ProviderLimitStore,
    private readonly log: Logger,
  ) {}

  /** The pause of `key` in force, until ms (0 or past: none), and whether a pace learnt from 429s is. */
  async read(key: string): Promise<Pick<Seen, 'untilMs' | 'learnt'>> {
    const now = Date.now();
    const seen = this.seen.get(key);
    if (seen && now - seen.readAt < REFRESH_MS) return seen;
    if (seen?.reading) return seen.reading;
    const entry: Seen = seen ?? { untilMs: 0, learnt: false, readAt: 0 };
    entry.reading = withTimeout(this.store.readPause(key), REFRESH_MS, 'provider pause')
      .catch((err: unknown) => {
        this.log.warn({ err, key }, 'provider limiter: reading a pause failed; letting requests through');
        return entry;
      })
      .then(({ untilMs, learnt }) => {
        entry.untilMs = untilMs;
        entry.learnt = learnt;
        entry.readAt = Date.now();
        entry.reading = undefined;
        return entry;
      });
    this.seen.set(key, entry);
    return entry.reading;
  }

  /** A pause learnt otherwise (this process set it, or a limited key's turn saw it); `learnt` when Redis said whether a pace is in force. */
  note(key: string, untilMs: number, learnt?: boolean): void {
    const entry = this.seen.get(key);
    if (entry) {
      entry.untilMs = Math.max(entry.untilMs, untilMs);
      if (learnt !== undefined) entry.learnt = learnt;
    } else this.seen.set(key, { untilMs, learnt: learnt ?? false, readAt: Date.now() });
  }

  /** Keys whose pause was seen, with its end (ms). */
  entries(): [string, number][] {
    return [...this.seen].filter(([, s]) => s.untilMs > 0).map(([key, s]) => [key, s.untilMs]);
  }
}
