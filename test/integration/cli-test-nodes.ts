import { setTimeout as sleep } from 'node:timers/promises';
import { defineNode } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';

/** Reports progress, then waits `ms`: a step long enough to press Ctrl-C in. Free. */
export const pauseNode = defineNode({
  spec: {
    id: 'test-pause',
    kind: 'model',
    title: 'Pause',
    category: 'test',
    description: 'Reports progress, then waits',
    inputs: ports({ ms: connector('INT') }),
    outputs: ports({ done: connector('BOOLEAN') }),
  },
  estimate: () => 0,
  price: () => 0,
  async execute(inputs, ctx) {
    ctx.progress(`pausing ${inputs.ms as number} ms`);
    await sleep(inputs.ms as number, undefined, { signal: ctx.signal });
    return { done: true };
  },
});
