import { OPERATIONS, OP_NAMES, ROUTES, validatorFor } from '../../services/contract';

describe('the operation registry', () => {
  it('holds exactly the five operations of the spec with their HTTP routes, tools and scopes', () => {
    const table = OP_NAMES.map((name) => {
      const op = OPERATIONS[name];
      return [op.name, `${op.http.method} ${op.http.path}`, op.mcpTool, op.scope];
    });
    expect(table).toEqual([
      ['nodes.list', 'GET /v1/nodes', 'nodes_list', 'read'],
      ['nodes.get', 'GET /v1/nodes/:id', 'nodes_get', 'read'],
      ['workflows.get', 'GET /v1/workflows/:id', 'workflows_get', 'read'],
      ['runs.create', 'POST /v1/runs', 'runs_create', 'run'],
      ['runs.node', 'POST /v1/runs/node', 'runs_node', 'run'],
    ]);
  });

  it('names every operation by its key, its MCP tool by the underscore form, and declares its path parameters', () => {
    for (const name of OP_NAMES) {
      const op = OPERATIONS[name];
      expect(op.name).toBe(name);
      expect(op.mcpTool).toBe(name.replace('.', '_'));
      const inPath = [...op.http.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      expect(inPath).toEqual([...op.http.pathParams]);
      const properties = Object.keys((op.input as { properties: object }).properties);
      for (const param of op.http.pathParams) expect(properties).toContain(param);
    }
  });

  it('only lets the catalog work without a token, and only run-scoped operations spend money', () => {
    for (const name of OP_NAMES) {
      const op = OPERATIONS[name];
      expect(op.auth === 'optional').toBe(name === 'nodes.list' || name === 'nodes.get');
      expect(op.spendsMoney).toBe(op.scope === 'run');
      expect(op.readOnly).toBe(op.scope === 'read');
    }
  });

  it('rejects unknown fields in every operation input and compiles every schema', () => {
    for (const name of OP_NAMES) {
      const op = OPERATIONS[name];
      expect((op.input as { additionalProperties?: boolean }).additionalProperties).toBe(false);
      expect(() => validatorFor(op.input)).not.toThrow();
      expect(() => validatorFor(op.output)).not.toThrow();
    }
  });
});

describe('the route registry beside the operations', () => {
  it('names every route by its key, declares its path parameters, and rejects unknown fields', () => {
    for (const [name, op] of Object.entries(ROUTES)) {
      expect(op.name).toBe(name);
      expect(op.mcpTool).toBe(name.replaceAll('.', '_'));
      const inPath = [...op.http.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      expect(inPath).toEqual([...op.http.pathParams]);
      const properties = Object.keys((op.input as { properties: object }).properties);
      for (const param of op.http.pathParams) expect(properties).toContain(param);
      expect((op.input as { additionalProperties?: boolean }).additionalProperties).toBe(false);
      expect(() => validatorFor(op.input)).not.toThrow();
      expect(() => validatorFor(op.output)).not.toThrow();
    }
  });

  it('answers 204 with nothing, and lets only people (not personal access tokens) mint credentials', () => {
    // Reads are GETs, but for the estimate: a POST because it takes a run's whole body, and it stores nothing.
    const postedReads: readonly string[] = ['runs.estimate'];
    for (const op of Object.values(ROUTES)) {
      if (op.http.status === 204) expect(op.output).toEqual(expect.objectContaining({ type: 'null' }));
      expect(op.readOnly).toBe(op.http.method === 'GET' || postedReads.includes(op.name));
    }
    for (const name of ['tokens.create', 'tokens.revoke', 'device.approve', 'device.deny'] as const) expect(ROUTES[name].kinds).toEqual(['browser', 'session']);
  });

  it('holds a stream slot for every call that keeps its answer open while a run or a batch goes on', () => {
    const holding = [...Object.values(OPERATIONS), ...Object.values(ROUTES)].filter((op) => op.holdsStream).map((op) => op.name);
    expect(holding).toEqual(['runs.create', 'runs.node', 'runs.events', 'batches.events', 'editor.workflows.run']);
  });
});
