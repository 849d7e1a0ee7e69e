import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Takes `sample()` every `intervalMs` (after each one ends) until stopped, for invariants that
 * must hold at every moment of a scenario (a cap, a balance), not only at its end.
 */
export function sampleUntilStopped<T>(sample: () => Promise<T>, intervalMs: number): { stop(): Promise<T[]> } {
  const samples: T[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      samples.push(await sample());
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}
