import { KeyedBatcher } from '../../services/store/keyed-batcher';

/** A promise with its resolve, to hold a batch out until the test lets it go. */
function held(): { promise: Promise<void>; release(): void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedBatcher', () => {
  it('sends an item at once while a place is free, and those that queue behind `limit` batches together, in arrival order, at most `maxBatch` at a time', async () => {
    const sent: string[][] = [];
    const gates: ReturnType<typeof held>[] = [];
    const batcher = new KeyedBatcher<string, string>(2, 3, async (key, items) => {
      sent.push(items.map((i) => `${key}:${i}`));
      const gate = held();
      gates.push(gate);
      await gate.promise;
      return items.map((i) => ({ status: 'fulfilled', value: i.toUpperCase() }));
    });
    const a = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((i) => batcher.run('org-a', i));
    const b = batcher.run('org-b', 'b0');
    await tick();
    // Two places for org-a: a0 and a1 went alone; org-b is another key.
    expect(sent).toEqual([['org-a:a0'], ['org-a:a1'], ['org-b:b0']]);
    expect(batcher.load('org-a')).toEqual({ sending: 2, waiting: 5 });
    gates[2]!.release();
    await expect(b).resolves.toBe('B0');
    gates[0]!.release();
    await tick();
    expect(sent.slice(3)).toEqual([['org-a:a2', 'org-a:a3', 'org-a:a4']]);
    gates[1]!.release();
    await tick();
    expect(sent.slice(4)).toEqual([['org-a:a5', 'org-a:a6']]);
    gates[3]!.release();
    gates[4]!.release();
    await expect(Promise.all(a)).resolves.toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6']);
    expect(batcher.load('org-a')).toEqual({ sending: 0, waiting: 0 });
  });

  it('answers each item its own result, and fails every item of a batch whose sending failed', async () => {
    let fail = false;
    const batcher = new KeyedBatcher<number, number>(1, 10, async (_key, items) => {
      if (fail) throw new Error('down');
      return items.map((n) => (n < 0 ? { status: 'rejected', reason: new RangeError(`${n} is negative`) } : { status: 'fulfilled', value: n * 2 }));
    });
    const results = await Promise.allSettled([1, -1, 3].map((n) => batcher.run('k', n)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: new RangeError('-1 is negative') },
      { status: 'fulfilled', value: 6 },
    ]);
    fail = true;
    const failed = await Promise.allSettled([1, 2, 3].map((n) => batcher.run('k', n)));
    expect(failed.map((r) => r.status === 'rejected' && (r.reason as Error).message)).toEqual(['down', 'down', 'down']);
    fail = false;
    await expect(batcher.run('k', 5)).resolves.toBe(10);
    expect(batcher.load('k')).toEqual({ sending: 0, waiting: 0 });
  });

  it('fails the items of a batch answered with a wrong number of results', async () => {
    const batcher = new KeyedBatcher<number, number>(1, 10, async () => []);
    await expect(batcher.run('k', 1)).rejects.toThrow('a batch of 1 was answered 0 results');
  });

  it('refuses a limit or batch size that is not a positive whole number', () => {
    const send = async () => [];
    expect(() => new KeyedBatcher(0, 1, send)).toThrow("a batcher's limit must be a positive whole number, got 0");
    expect(() => new KeyedBatcher(1, 1.5, send)).toThrow("a batcher's batch size must be a positive whole number, got 1.5");
  });
});
