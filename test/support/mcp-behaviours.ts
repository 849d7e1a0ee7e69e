import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { OPERATIONS, ROUTES } from '../../services/contract';
import { declarationOf, TOOL_OPS, type ToolOp } from '../../services/mcp';
import { eventually } from './eventually';
import { TWO_ADDS, FAILING, runRecordWhenDone, toolJson, type WireProgress } from './mcp-client';
import { publishWorkflow, type TestService } from './service';
import { pauseChain } from './test-nodes';

/** What the shared MCP behaviours need of a test file: its service, a client, and how tools are named. */
export interface McpTestContext {
  service: TestService;
  client: Client;
  /** A client of the same server acting with a token that has only scope `read`. */
  readOnlyClient(): Promise<Client>;
  name(op: ToolOp): string;
  /** The progress notifications `client`'s transport received (`recordWireProgress`). */
  wireProgress: WireProgress[];
}

/**
 * The behaviours every MCP server of the service has, whatever its transport (stdio through the
 * SDK, streamable HTTP over invoke): registered as tests of the calling describe block.
 * The service must have the test nodes `pauseNode` and `failingNode`.
 */
export function mcpToolBehaviours(context: () => McpTestContext): void {
  it("lists the five operations' tools, then the batch tools, each advertising its declaration's input schema exactly", async () => {
    const { client, name } = context();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_OPS.map(name));
    expect(tools.slice(5).map((t) => t.name)).toEqual([name('batches.create'), name('batches.get')]);
    TOOL_OPS.forEach((op, i) => {
      expect(tools[i]!.inputSchema).toEqual(JSON.parse(JSON.stringify(declarationOf(op).input)));
      expect(tools[i]!.description).toContain('Example input');
    });
    expect(tools.find((t) => t.name === name('runs.create'))!.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true, idempotentHint: false });
  });

  it('answers the read tools with JSON text of their outputs', async () => {
    const { client, name, service } = context();
    const list = toolJson(await client.callTool({ name: name('nodes.list'), arguments: { q: 'math-add' } })) as unknown as { id: string }[];
    expect(list.map((n) => n.id)).toContain('math-add');
    const node = toolJson(await client.callTool({ name: name('nodes.get'), arguments: { id: 'math-add' } }));
    expect(node).toMatchObject({ id: 'math-add', inputs: { a: { name: 'a' } } });
    const slug = `adder-${name('nodes.get').includes('.') ? 'stdio' : 'http'}`;
    await publishWorkflow(service, slug, OPERATIONS['runs.create'].agent!.example.workflow);
    const published = toolJson(await client.callTool({ name: name('workflows.get'), arguments: { id: `${service.account.orgSlug}/${slug}`, version: '1' } }));
    expect(published).toMatchObject({ address: `${service.account.orgSlug}/${slug}`, version: expect.stringMatching(/^1\.\d+\.\d+$/), sequence: 1, workflow: { version: 2 } });
  });

  it("runs the contract's own examples of the two run tools", async () => {
    const { client, name } = context();
    const created = await client.callTool({ name: name('runs.create'), arguments: OPERATIONS['runs.create'].agent!.example });
    expect(created.isError).toBeFalsy();
    expect(toolJson(created)).toEqual({ outputs: { result: { kind: 'float', value: 42 } } });
    const node = await client.callTool({ name: name('runs.node'), arguments: OPERATIONS['runs.node'].agent!.example });
    expect(toolJson(node)).toEqual({ outputs: { result: { kind: 'float', value: 3 } } });
  });

  it("starts a batch with the batch tool (its own example) and reads its progress to the end", async () => {
    const { client, name } = context();
    const started = await client.callTool({ name: name('batches.create'), arguments: ROUTES['batches.create'].agent!.example });
    expect(started.isError).toBeFalsy();
    const batch = toolJson(started) as unknown as { id: string; status: string; rows: { total: number } };
    expect(batch).toMatchObject({ status: 'running', rows: { total: 3 } });
    const ended = await eventually(async () => {
      const read = toolJson(await client.callTool({ name: name('batches.get'), arguments: { id: batch.id } })) as unknown as { status: string; rows: { completed: number }; spentUsd: number };
      return read.status === 'completed' ? read : null;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    expect(ended.rows.completed).toBe(3);
    const missing = toolJson(await client.callTool({ name: name('batches.get'), arguments: { id: '00000000-0000-4000-8000-000000000000' } }));
    expect(missing).toMatchObject({ error: { code: 'not_found', message: expect.stringContaining('no batch') } });
  });

  it('answers refusals as error results with the code and a hint, never as protocol errors', async () => {
    const { client, name } = context();
    const invalid = await client.callTool({ name: name('nodes.get'), arguments: { id: 'math-add', extra: 1 } });
    expect(invalid.isError).toBe(true);
    expect(toolJson(invalid)).toMatchObject({ error: { code: 'validation_failed', message: expect.stringContaining('extra') }, hint: expect.any(String) });
    const missing = await client.callTool({ name: name('nodes.get'), arguments: { id: 'no-such-node' } });
    expect(toolJson(missing)).toMatchObject({ error: { code: 'not_found' } });
    const both = await client.callTool({ name: name('runs.create'), arguments: { workflow: TWO_ADDS, workflowRef: 'a/b@1' } });
    expect(toolJson(both).error!.code).toBe('validation_failed');
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no tool is named "no_such_tool"/);
  });

  it('reports a failed run with its run.failed code, message and run id', async () => {
    const { client, name, service } = context();
    const failed = await client.callTool({ name: name('runs.create'), arguments: { workflow: FAILING } });
    expect(failed.isError).toBe(true);
    const body = toolJson(failed);
    expect(body).toMatchObject({ error: { code: expect.any(String), message: expect.stringContaining('fails on purpose') }, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect((await runRecordWhenDone(service, body.runId!)).status).toBe('failed');
    const node = toolJson(await client.callTool({ name: name('runs.node'), arguments: { node: 'test-fail', inputs: { n: 1 } } }));
    expect(node).toMatchObject({ error: { message: expect.stringContaining('fails on purpose') }, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('stops a run at its spend cap and says how to raise it', async () => {
    const { client, name } = context();
    const capped = toolJson(await client.callTool({ name: name('runs.create'), arguments: { workflow: TWO_ADDS, maxCostUsd: 0.000001 } }));
    expect(capped).toMatchObject({ error: { code: 'spend_cap_exceeded' }, runId: expect.any(String), hint: expect.stringMatching(/maxCostUsd.*1\.00/) });
  });

  it("sends the run's events as progress notifications when asked", async () => {
    const { client, name, wireProgress } = context();
    const progress: { progress: number; message?: string }[] = [];
    wireProgress.length = 0;
    const result = await client.callTool({ name: name('runs.create'), arguments: { workflow: TWO_ADDS } }, undefined, { onprogress: (p) => progress.push(p) });
    expect(toolJson(result)).toEqual({ outputs: { out: { kind: 'float', value: 3 } } });
    // What the server sent, before its result: every event but the terminal one, numbered in order.
    expect(new Set(wireProgress.map((p) => p.progressToken)).size).toBe(1);
    const messages = wireProgress.map((p) => p.message);
    expect(messages[0]).toMatch(/^run\.started [0-9a-f-]{36}$/);
    expect(messages).toContain('step.started n0');
    expect(messages).toContainEqual(expect.stringMatching(/^step\.completed n1 \$0\.000001 \d+ ms$/));
    expect(wireProgress.map((p) => p.progress)).toEqual(wireProgress.map((_, i) => i + 1));
    // What the client's handler was given: those sent before the result reached it, in order (see recordWireProgress).
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toEqual(wireProgress.slice(0, progress.length).map(({ progress: n, message }) => ({ progress: n, message })));
  });

  it('refuses the run tools to a read-only token, naming the missing scope', async () => {
    const { name } = context();
    const readOnly = await context().readOnlyClient();
    try {
      const refused = toolJson(await readOnly.callTool({ name: name('runs.create'), arguments: { workflow: TWO_ADDS } }));
      expect(refused).toMatchObject({ error: { code: 'insufficient_scope', message: expect.stringContaining('run') }, hint: expect.stringContaining('scope') });
      expect(toolJson(await readOnly.callTool({ name: name('runs.node'), arguments: { node: 'math-add', inputs: { a: 1, b: 2 } } })).error!.code).toBe('insufficient_scope');
      expect(toolJson(await readOnly.callTool({ name: name('nodes.get'), arguments: { id: 'math-add' } })).id).toBe('math-add');
    } finally {
      await readOnly.close();
    }
  });

  it('ends a cancelled call at once while its run completes on the server', async () => {
    const { client, name, service } = context();
    const controller = new AbortController();
    let runId: string | undefined;
    const started = Date.now();
    const call = client.callTool({ name: name('runs.create'), arguments: { workflow: pauseChain(1, 2000) } }, undefined, {
      signal: controller.signal,
      onprogress: (p) => {
        runId ??= /^run\.started (\S+)$/.exec(p.message ?? '')?.[1];
        if (p.message?.startsWith('step.started')) controller.abort();
      },
    });
    await expect(call).rejects.toThrow(/abort/i);
    expect(Date.now() - started).toBeLessThan(1900);
    expect(runId).toBeDefined();
    expect(await runRecordWhenDone(service, runId!)).toMatchObject({ status: 'completed', outputs: { out: { value: 1 } } });
  });
}
