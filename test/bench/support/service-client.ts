import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import type { BenchService } from '../../support/bench-stack';
import { sseMessages } from '../../support/sse';

/** A run's longest wait before it counts as failed. */
export const RUN_TIMEOUT_MS = 60_000;

/** `math-add` (literal inputs) → `output`: the cheapest run there is. */
export const ONE_NODE = {
  workflow: {
    version: 2,
    nodes: [
      { id: 'sum', uses: 'math-add', inputs: { a: 1, b: 2 } },
      { id: 'out', uses: 'output', inputs: { value: '${sum.result}' } },
    ],
  },
};
export const ONE_NODE_OUTPUTS = { out: { kind: 'float', value: 3 } };

/** `length` `math-add` nodes each reading the previous result (n0 = 2, each further node adds 1). */
export function mathChain(length: number) {
  return {
    body: {
      workflow: {
        version: 2,
        nodes: [
          { id: 'n0', uses: 'math-add', inputs: { a: 1, b: 1 } },
          ...Array.from({ length: length - 1 }, (_, i) => ({ id: `n${i + 1}`, uses: 'math-add', inputs: { a: `\${n${i}.result}`, b: 1 } })),
          { id: 'out', uses: 'output', inputs: { value: `\${n${length - 1}.result}` } },
        ],
      },
    },
    outputs: { out: { kind: 'float', value: length + 1 } },
  };
}

/**
 * One run, POST /v1/runs to `data: [DONE]`, checked: the last event is run.completed with
 * `expected` outputs (when given), then [DONE], then nothing. Resolves to its milliseconds.
 */
export async function runOnce(service: Pick<BenchService, 'url' | 'account'>, body: string, expected?: unknown, token = service.account.token): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body,
    signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
  });
  if (res.status !== 200 || !res.body) throw new Error(`POST /v1/runs answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  let elapsed: number | undefined;
  let terminal: string | undefined;
  let afterDone = 0;
  // Read to the end (not just to [DONE]), so the connection goes back to the keep-alive pool.
  for await (const message of sseMessages(res.body)) {
    if (elapsed !== undefined) afterDone++;
    else if (message.data === '[DONE]') elapsed = performance.now() - started;
    else terminal = message.data;
  }
  if (elapsed === undefined) throw new Error(`the stream ended without [DONE]; last event: ${terminal?.slice(0, 300)}`);
  if (afterDone > 0) throw new Error(`${afterDone} messages after [DONE]`);
  const event = JSON.parse(terminal ?? 'null') as { type?: string; outputs?: unknown } | null;
  if (event?.type !== 'run.completed') throw new Error(`the last event is not run.completed: ${terminal?.slice(0, 300)}`);
  if (expected !== undefined && !isDeepStrictEqual(event.outputs, expected)) throw new Error(`wrong outputs: ${JSON.stringify(event.outputs)}, expected ${JSON.stringify(expected)}`);
  return elapsed;
}
