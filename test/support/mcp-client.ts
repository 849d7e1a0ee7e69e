import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { bearer, type TestService } from './service';

/** The JSON document a tool answered (its one text block). */
export function toolJson(result: unknown): Record<string, unknown> & { error?: { code: string; message: string }; runId?: string; hint?: string } {
  const content = (result as CallToolResult).content;
  expect(content).toHaveLength(1);
  const block = content[0] as { type: string; text: string };
  expect(block.type).toBe('text');
  return JSON.parse(block.text) as ReturnType<typeof toolJson>;
}

/** Waits until the run's record says it has ended, and returns that record. */
export async function runRecordWhenDone(service: TestService, runId: string, timeoutMs = 15_000): Promise<{ status: string; outputs: unknown }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${service.url}/v1/runs/${runId}`, { headers: bearer(service.account.token) });
    const run = (await response.json()) as { status: string; outputs: unknown };
    if (run.status === 'completed' || run.status === 'failed' || Date.now() > deadline) return run;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A two-step chain of paid `math-add` nodes (1 micro-USD each): a cap of one micro-USD stops it at the second. */
export const TWO_ADDS = {
  version: 2,
  nodes: [
    { id: 'n0', uses: 'math-add', inputs: { a: 1, b: 1 } },
    { id: 'n1', uses: 'math-add', inputs: { a: '${n0.result}', b: 1 } },
    { id: 'out', uses: 'output', inputs: { value: '${n1.result}' } },
  ],
};

/** A workflow whose one node always fails (test-nodes.ts `failingNode`). */
export const FAILING = {
  version: 2,
  nodes: [
    { id: 'f', uses: 'test-fail', inputs: { n: 1 } },
    { id: 'out', uses: 'output', inputs: { value: '${f.n}' } },
  ],
};

/** A progress notification as it crossed the wire. */
export interface WireProgress {
  progressToken: string | number;
  progress: number;
  message?: string;
}

/**
 * Records every progress notification `transport` receives, before the client's handlers see
 * it. Call after `Client.connect` (which installs the handler this wraps). The official client
 * handles notifications a microtask late and responses at once, so on a loaded machine the
 * notifications read in the same chunk as their call's result never reach `onprogress`: what the
 * server sent is asserted here, what the client kept only as a prefix of it.
 */
export function recordWireProgress(transport: Transport): WireProgress[] {
  const seen: WireProgress[] = [];
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ('method' in message && message.method === 'notifications/progress') seen.push(message.params as unknown as WireProgress);
    inner?.(message, extra);
  };
  return seen;
}
