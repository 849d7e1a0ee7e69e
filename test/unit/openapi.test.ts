import { buildOpenApiDocument, OPERATIONS, OP_NAMES } from '../../services/contract';

describe('the OpenAPI document', () => {
  const doc = buildOpenApiDocument({ serverUrl: 'http://svc.test', version: '1' }) as {
    paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, { schema: unknown }> }; parameters: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
  };

  it('has every operation of the registry at its method and path, with the same input schema', () => {
    for (const name of OP_NAMES) {
      const op = OPERATIONS[name];
      const entry = doc.paths[op.http.path.replace(/:(\w+)/g, '{$1}')]?.[op.http.method.toLowerCase()];
      expect(entry?.operationId).toBe(name);
      if (op.http.method === 'POST') {
        expect(entry?.requestBody?.content['application/json']?.schema).toEqual(JSON.parse(JSON.stringify(op.input)));
      } else {
        const names = entry?.parameters.map((p) => p.name).sort();
        expect(names).toEqual(Object.keys((op.input as { properties: object }).properties).sort());
      }
    }
  });

  it('documents the event stream of runs.create and the error statuses of each operation', () => {
    const create = doc.paths['/v1/runs']?.post;
    expect(Object.keys(create?.responses ?? {})).toEqual(expect.arrayContaining(['200', '400', '401', '402', '403', '404', '429']));
    expect(JSON.stringify(create?.responses['200'])).toContain('text/event-stream');
  });
});
