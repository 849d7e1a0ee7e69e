import { setTimeout as sleep } from 'node:timers/promises';
import type { Workflow } from '../../services/contract';
import { defineNode } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { AppError } from '../../services/platform/app-error';

/**
 * Free nodes for tests of clients (SDK, CLI): a step that lasts as long as asked (long enough to
 * cut a stream in, or to press Ctrl-C in), and one that always fails.
 */
export const pauseNode = defineNode({
  spec: {
    id: 'test-pause',
    kind: 'model',
    title: 'Pause',
    category: 'test',
    description: 'Reports progress, waits `ms`, then passes `n` on plus one',
    inputs: ports({ ms: connector('INT'), n: connector('INT', { defaultValue: 0 }) }),
    outputs: ports({ n: connector('INT'), done: connector('BOOLEAN') }),
  },
  estimate: () => 0,
  price: () => 0,
  async execute(inputs, ctx) {
    ctx.progress(`pausing ${inputs.ms as number} ms`);
    await sleep(inputs.ms as number, undefined, { signal: ctx.signal });
    return { n: (inputs.n as number) + 1, done: true };
  },
});

export const failingNode = defineNode({
  spec: { id: 'test-fail', kind: 'model', title: 'Fail', category: 'test', description: 'Always fails', inputs: ports({ n: connector('INT') }), outputs: ports({ n: connector('INT') }) },
  estimate: () => 0,
  price: () => 0,
  execute() {
    throw new AppError({ code: 'bad_request', message: 'this node fails on purpose' });
  },
});

/** A chain of `length` pauses of `ms` each; its output `out` is the number `length`. */
export function pauseChain(length: number, ms: number): Workflow {
  return {
    version: 2,
    nodes: [
      ...Array.from({ length }, (_, i) => ({ id: `p${i}`, uses: 'test-pause', inputs: { n: i === 0 ? 0 : `\${p${i - 1}.n}`, ms } })),
      { id: 'out', uses: 'output', inputs: { value: `\${p${length - 1}.n}` } },
    ],
  };
}
