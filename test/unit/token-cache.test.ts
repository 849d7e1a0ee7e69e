import { TokenCache, type TokenLookupResult } from '../../services/api/auth/token-cache';
import type { TokenRecord } from '../../services/store';

function record(id: string, revokedAt: Date | null = null): TokenRecord {
  return { id, userId: 'u', orgId: 'o', scopes: ['run'], kind: 'personal', expiresAt: null, revokedAt };
}

/** A cache over a table the test edits, counting reads, with a clock the test moves. */
function setUp(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const table = new Map<string, TokenRecord>([
    ['h1', record('t1')],
    ['h2', record('t2')],
    ['h3', record('t3')],
  ]);
  let reads = 0;
  let clock = 1_000;
  const results: TokenLookupResult[] = [];
  let release: (() => void) | undefined;
  const cache = new TokenCache({
    async load(hash) {
      reads++;
      if (release === undefined) return table.get(hash) ?? null;
      // A read the test holds: its answer is what the table held when it was sent.
      const answer = table.get(hash) ?? null;
      await new Promise<void>((resolve) => (release = resolve));
      return answer;
    },
    ttlMs: options.ttlMs ?? 30_000,
    maxEntries: options.maxEntries ?? 100,
    now: () => clock,
    observe: (result) => results.push(result),
  });
  return {
    cache,
    table,
    reads: () => reads,
    results,
    tick: (ms: number) => (clock += ms),
    /** The next read waits until `finish` is called. */
    holdNextRead() {
      release = () => undefined;
      return {
        finish: () => {
          const resolve = release!;
          release = undefined;
          resolve();
        },
      };
    },
  };
}

describe('the API process token cache', () => {
  it('reads the database for every lookup until it hears changes, then remembers what it read', async () => {
    const t = setUp();
    await t.cache.findByHash('h1');
    await t.cache.findByHash('h1');
    expect(t.reads()).toBe(2);
    expect(t.results).toEqual(['bypass', 'bypass']);
    t.cache.listening(true);
    expect((await t.cache.findByHash('h1'))?.id).toBe('t1');
    expect((await t.cache.findByHash('h1'))?.id).toBe('t1');
    expect(t.reads()).toBe(3);
    expect(t.results.slice(2)).toEqual(['miss', 'hit']);
  });

  it('forgets a token when told it changed, and everything when told to clear', async () => {
    const t = setUp();
    t.cache.listening(true);
    await t.cache.findByHash('h1');
    await t.cache.findByHash('h2');
    t.table.set('h1', record('t1', new Date(5)));
    t.cache.changed('h1');
    expect((await t.cache.findByHash('h1'))?.revokedAt).toEqual(new Date(5));
    expect((await t.cache.findByHash('h2'))?.id).toBe('t2');
    expect(t.reads()).toBe(3);
    t.table.set('h2', record('t2', new Date(6)));
    t.cache.clear();
    expect((await t.cache.findByHash('h2'))?.revokedAt).toEqual(new Date(6));
    expect(t.reads()).toBe(4);
  });

  it('does not remember a read that began before a change it was told of', async () => {
    const t = setUp();
    t.cache.listening(true);
    const held = t.holdNextRead();
    const stale = t.cache.findByHash('h1');
    // The revocation commits and its notification arrives while the read is on its way back.
    t.table.set('h1', record('t1', new Date(7)));
    t.cache.changed('h1');
    held.finish();
    expect((await stale)?.revokedAt).toBeNull();
    expect((await t.cache.findByHash('h1'))?.revokedAt).toEqual(new Date(7));
    expect(t.reads()).toBe(2);
  });

  it('stops serving and forgets everything when it may miss changes, and starts afresh when it hears again', async () => {
    const t = setUp();
    t.cache.listening(true);
    await t.cache.findByHash('h1');
    t.cache.listening(false);
    expect(t.cache.size).toBe(0);
    // A change made while deaf: never heard, and never served stale.
    t.table.set('h1', record('t1', new Date(8)));
    expect((await t.cache.findByHash('h1'))?.revokedAt).toEqual(new Date(8));
    expect(t.cache.size).toBe(0);
    t.cache.listening(true);
    await t.cache.findByHash('h1');
    await t.cache.findByHash('h1');
    expect(t.results).toEqual(['miss', 'bypass', 'miss', 'hit']);
  });

  it('does not remember a read that was under way when it stopped hearing', async () => {
    const t = setUp();
    t.cache.listening(true);
    const held = t.holdNextRead();
    const read = t.cache.findByHash('h1');
    t.cache.listening(false);
    t.cache.listening(true);
    held.finish();
    await read;
    expect(t.cache.size).toBe(0);
  });

  it('trusts a record no longer than its time limit', async () => {
    const t = setUp({ ttlMs: 1_000 });
    t.cache.listening(true);
    await t.cache.findByHash('h1');
    t.tick(999);
    await t.cache.findByHash('h1');
    expect(t.reads()).toBe(1);
    t.tick(1);
    await t.cache.findByHash('h1');
    expect(t.reads()).toBe(2);
  });

  it('remembers neither unknown tokens nor anything with a time limit of 0', async () => {
    const off = setUp({ ttlMs: 0 });
    off.cache.listening(true);
    await off.cache.findByHash('h1');
    await off.cache.findByHash('h1');
    expect(off.reads()).toBe(2);
    expect(off.results).toEqual(['bypass', 'bypass']);
    const t = setUp();
    t.cache.listening(true);
    expect(await t.cache.findByHash('nope')).toBeNull();
    t.table.set('nope', record('t9'));
    // A token created after a failed guess works at once.
    expect((await t.cache.findByHash('nope'))?.id).toBe('t9');
  });

  it('holds at most its number of entries, dropping the oldest first', async () => {
    const t = setUp({ maxEntries: 2 });
    t.cache.listening(true);
    await t.cache.findByHash('h1');
    await t.cache.findByHash('h2');
    await t.cache.findByHash('h3');
    expect(t.cache.size).toBe(2);
    await t.cache.findByHash('h3');
    await t.cache.findByHash('h2');
    expect(t.reads()).toBe(3);
    await t.cache.findByHash('h1');
    expect(t.reads()).toBe(4);
  });

  it('peeks at what it remembers without reading: nothing while deaf, after a change, or past the lifetime', async () => {
    const t = setUp({ ttlMs: 1_000 });
    await t.cache.findByHash('h1');
    expect(t.cache.peek('h1')).toBeUndefined();
    t.cache.listening(true);
    expect(t.cache.peek('h1')).toBeUndefined();
    await t.cache.findByHash('h1');
    await t.cache.findByHash('h2');
    expect(t.cache.peek('h1')?.id).toBe('t1');
    expect(t.cache.peek('h3')).toBeUndefined();
    t.cache.changed('h1');
    expect(t.cache.peek('h1')).toBeUndefined();
    expect(t.cache.peek('h2')?.id).toBe('t2');
    t.tick(1_000);
    expect(t.cache.peek('h2')).toBeUndefined();
    t.cache.listening(false);
    expect(t.reads()).toBe(3);
    expect(t.results.filter((r) => r !== 'bypass')).toEqual(['miss', 'miss']);
  });
});
