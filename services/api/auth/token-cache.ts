import type { TokenRecord } from './auth-context';

/** Which way a lookup was answered (`svc_token_lookups_total{result}`). */
export type TokenLookupResult = 'hit' | 'miss' | 'bypass';

export interface TokenCacheOptions {
  /** Reads a token's record from the database. */
  load(hash: string): Promise<TokenRecord | null>;
  /** Longest a remembered record is trusted; 0 turns the cache off. */
  ttlMs: number;
  /** Most records remembered; the oldest goes first. */
  maxEntries: number;
  now?: () => number;
  /** Told how each lookup was answered; for metrics. */
  observe?: (result: TokenLookupResult) => void;
}

interface Entry {
  record: TokenRecord;
  until: number;
}

/**
 * The records of the access tokens this API process authenticated, so that a request with a
 * known token costs no database round trip (one of the three Postgres statements of a run).
 *
 * Correctness rests on being told every change: `changed(hash)` for each notification of
 * `svc_token_changes`, `clear()` for a revocation made in this process, and `listening(false)`
 * whenever notifications may be missed, after which nothing is served or remembered until
 * `listening(true)` (which forgets everything first: changes made while deaf were not heard).
 * A lookup whose read began before a change is not remembered (the generation moved), so a
 * record read just before a revocation cannot outlive the revocation's notification. `ttlMs`
 * bounds what a lost notification on a connection still thought alive can cost.
 *
 * Unknown tokens are not remembered: a new token works at once, and a guessed one costs what it
 * always did. A revoked or expired record is remembered like any other; the caller refuses it.
 */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;
  private heard = false;
  private readonly now: () => number;

  constructor(private readonly options: TokenCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Records remembered now (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  async findByHash(hash: string): Promise<TokenRecord | null> {
    const { load, ttlMs, observe } = this.options;
    if (!this.heard || ttlMs <= 0) {
      observe?.('bypass');
      return load(hash);
    }
    const at = this.now();
    const entry = this.entries.get(hash);
    if (entry && entry.until > at) {
      observe?.('hit');
      return entry.record;
    }
    if (entry) this.entries.delete(hash);
    observe?.('miss');
    const generation = this.generation;
    const record = await load(hash);
    if (record && this.heard && generation === this.generation) this.remember(hash, { record, until: at + ttlMs });
    return record;
  }

  /**
   * The record remembered for this hash, without reading the database: undefined when none is
   * (or the cache is not serving). Lets a caller act early on a token it will look up anyway.
   */
  peek(hash: string): TokenRecord | undefined {
    if (!this.heard || this.options.ttlMs <= 0) return undefined;
    const entry = this.entries.get(hash);
    return entry && entry.until > this.now() ? entry.record : undefined;
  }

  /** The token with this hash changed or went: forget it. */
  changed(hash: string): void {
    this.entries.delete(hash);
    this.generation++;
  }

  /** Forget everything (a revocation made here, whose hashes the caller does not know). */
  clear(): void {
    this.entries.clear();
    this.generation++;
  }

  /** Whether changes are being heard; see the class comment. */
  listening(heard: boolean): void {
    this.clear();
    this.heard = heard;
  }

  private remember(hash: string, entry: Entry): void {
    this.entries.delete(hash);
    if (this.entries.size >= this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(hash, entry);
  }
}
