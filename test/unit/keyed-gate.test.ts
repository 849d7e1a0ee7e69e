import { KeyedGate } from '../../services/store/keyed-gate';

/** A promise with its resolve, to hold a gate's place until the test lets go. */
function held(): { promise: Promise<void>; release(): void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedGate', () => {
  it('lets `limit` holders of a key in at once, the others in arrival order as places free, and other keys through', async () => {
    const gate = new KeyedGate(2);
    const order: string[] = [];
    const places = Array.from({ length: 4 }, held);
    const runs = places.map((place, i) =>
      gate.run('org-a', async () => {
        order.push(`a${i}`);
        await place.promise;
      }),
    );
    const other = gate.run('org-b', async () => void order.push('b'));
    await tick();
    expect(order).toEqual(['a0', 'a1', 'b']);
    expect(gate.load('org-a')).toEqual({ holders: 2, waiting: 2 });
    await other;
    places[1]!.release();
    await tick();
    expect(order).toEqual(['a0', 'a1', 'b', 'a2']);
    places[0]!.release();
    places[2]!.release();
    places[3]!.release();
    await Promise.all(runs);
    expect(order).toEqual(['a0', 'a1', 'b', 'a2', 'a3']);
    expect(gate.load('org-a')).toEqual({ holders: 0, waiting: 0 });
  });

  it('lets a key go when the work fails, and passes the failure on', async () => {
    const gate = new KeyedGate(1);
    await expect(gate.run('k', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(gate.run('k', async () => 'next')).resolves.toBe('next');
    expect(gate.load('k')).toEqual({ holders: 0, waiting: 0 });
  });

  it('refuses a limit that is not a positive whole number', () => {
    expect(() => new KeyedGate(0)).toThrow('positive whole number');
    expect(() => new KeyedGate(1.5)).toThrow('positive whole number');
  });
});
