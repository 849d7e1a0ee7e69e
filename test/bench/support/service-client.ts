import http from 'node:http';
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
 * The load generator's connections: node:http with keep-alive, not `fetch`. Every workload's
 * client shares the machine (and, for most, the process) with the service it measures, and the
 * peers' clients are function calls; undici's fetch with its web streams cost about 1 ms of CPU
 * per run on this VM (15% of the process at B4's 100/s), node:http about a third of that
 * (docs/performance.md, How the figures are taken).
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/**
 * POSTs the JSON `body` with `headers` and resolves with the response once its headers are in (the
 * body is the caller's to read); over the keep-alive agent unless another is given.
 */
export function post(url: string, body: string, headers: Record<string, string>, via: http.Agent = agent): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: via, timeout: RUN_TIMEOUT_MS, headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, resolve);
    req.on('timeout', () => req.destroy(new Error(`POST ${url}: no answer within ${RUN_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The whole body of a response, as text. */
export async function textOf(res: http.IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let text = '';
  for await (const chunk of res) text += chunk as string;
  return text;
}

/**
 * One run, POST /v1/runs to `data: [DONE]`, checked: the last event is run.completed with
 * `expected` outputs (when given), then [DONE], then nothing. Resolves to its milliseconds.
 */
export async function runOnce(service: Pick<BenchService, 'url'> & { account: { token: string } }, body: string, expected?: unknown, token = service.account.token): Promise<number> {
  const started = performance.now();
  const res = await post(`${service.url}/v1/runs`, body, { Authorization: `Bearer ${token}` });
  if (res.statusCode !== 200) throw new Error(`POST /v1/runs answered ${res.statusCode}: ${(await textOf(res)).slice(0, 300)}`);
  let elapsed: number | undefined;
  let terminal: string | undefined;
  let afterDone = 0;
  // Read to the end (not just to [DONE]), so the connection goes back to the keep-alive pool.
  for await (const message of sseMessages(res)) {
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
