import { declarationOf, failureResult, progressMessage, TOOL_OPS, toolDefinitions, toolName, ToolFailure } from '../../services/mcp';

/** The MCP tool list and results, built from the contract without any server (services/mcp). */
describe('the MCP tools', () => {
  it('names the tools by mcpTool on the hosted server and by the dotted names over stdio', () => {
    expect(toolDefinitions('hosted').map((t) => t.name)).toEqual(['nodes_list', 'nodes_get', 'workflows_get', 'runs_create', 'runs_node', 'batches_create', 'batches_get']);
    expect(toolDefinitions('stdio').map((t) => t.name)).toEqual(['nodes.list', 'nodes.get', 'workflows.get', 'runs.create', 'runs.node', 'batches.create', 'batches.get']);
  });

  it("advertises each declaration's own input schema, and the agent text with this server's tool names", () => {
    for (const naming of ['hosted', 'stdio'] as const) {
      const tools = toolDefinitions(naming);
      TOOL_OPS.forEach((name, i) => {
        const tool = tools[i]!;
        expect(tool.inputSchema).toEqual(JSON.parse(JSON.stringify(declarationOf(name).input)));
        expect(tool.description).toContain(`Example input: ${JSON.stringify(declarationOf(name).agent!.example)}`);
        // No placeholder is left; the other tools are named as this server names them.
        expect(tool.description!.split('Example input')[0]).not.toMatch(/\{(nodes|workflows|runs|batches)\.\w+\}/);
      });
      expect(tools[0]!.description).toContain(toolName('runs.node', naming));
      expect(tools.find((t) => t.name === toolName('batches.create', naming))!.description).toContain(toolName('batches.get', naming));
    }
  });

  it('marks the read tools read-only and the run tools open-world, not idempotent, not destructive', () => {
    const byName = Object.fromEntries(toolDefinitions('hosted').map((t) => [t.name, t.annotations]));
    for (const read of ['nodes_list', 'nodes_get', 'workflows_get']) expect(byName[read]).toMatchObject({ readOnlyHint: true });
    expect(byName.batches_get).toMatchObject({ readOnlyHint: true });
    for (const run of ['runs_create', 'runs_node', 'batches_create']) expect(byName[run]).toMatchObject({ readOnlyHint: false, openWorldHint: true, idempotentHint: false, destructiveHint: false });
  });

  it('reports a failure as an error result with the code, message, run id and a hint', () => {
    const result = failureResult(new ToolFailure({ code: 'spend_cap_exceeded', message: 'the next step would exceed the cap', runId: 'r1' }), (op) => toolName(op, 'hosted'));
    expect(result.isError).toBe(true);
    const body = JSON.parse((result.content[0] as { text: string }).text);
    expect(body).toMatchObject({ error: { code: 'spend_cap_exceeded', message: 'the next step would exceed the cap' }, runId: 'r1', hint: expect.stringContaining('maxCostUsd') });
    const credit = failureResult(new ToolFailure({ code: 'insufficient_credit', message: 'no credit', details: { balanceUsd: 0 } }), (op) => op);
    expect(JSON.parse((credit.content[0] as { text: string }).text)).toMatchObject({ balanceUsd: 0, hint: expect.stringContaining('0 USD') });
  });

  it('says step events as progress messages, with cost and duration', () => {
    expect(progressMessage({ type: 'step.completed', nodeId: 'speak', usage: { costUsd: 0.000051, ms: 460 } })).toBe('step.completed speak $0.000051 460 ms');
    expect(progressMessage({ type: 'step.completed', nodeId: 'a', usage: { costUsd: 0.5, ms: 1 } })).toBe('step.completed a $0.500000 1 ms');
    expect(progressMessage({ type: 'step.failed', nodeId: 'a', error: { code: 'provider_error', message: 'upstream 500' } })).toBe('step.failed a provider_error: upstream 500');
    expect(progressMessage({ type: 'run.completed', outputs: {} })).toBeUndefined();
  });
});
