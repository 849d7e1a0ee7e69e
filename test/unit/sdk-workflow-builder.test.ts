import { validate, WorkflowSchema, type NodeSpec, type Workflow } from '../../services/contract';
import { prepareWorkflow, validateWorkflow } from '../../services/engine';
import { createNodeCatalog } from '../../services/nodes/registry';
import type { Client } from '../../services/sdk/src/client';
import { createWorkflow, isPortReference, type NodeSpecSource, type WorkflowValidation } from '../../services/sdk/src/workflow-builder';

const catalog = createNodeCatalog();

/** A client in the SDK's shape serving the real catalog, as JSON off the wire; unknown ids reject with status 404. */
function fakeClient(fail?: (id: string) => unknown): NodeSpecSource & { calls: string[]; signals: (AbortSignal | undefined)[] } {
  const calls: string[] = [];
  const signals: (AbortSignal | undefined)[] = [];
  return {
    calls,
    signals,
    ops: {
      'nodes.get': async ({ id }, options) => {
        calls.push(id);
        signals.push(options?.signal);
        const failure = fail?.(id);
        if (failure) throw failure;
        const spec = catalog.get(id);
        if (!spec) throw Object.assign(new Error(`no node "${id}"`), { status: 404, code: 'not_found' });
        return JSON.parse(JSON.stringify(spec)) as NodeSpec;
      },
    },
  };
}

/** What the server answers for `runs.create` with this workflow and no inputs: its problems, `workflow.` prefix taken off. */
function serverSays(workflow: Workflow): WorkflowValidation {
  const shape = validate(WorkflowSchema, workflow);
  if (!shape.ok) return { ok: false, problems: shape.issues, message: shape.message };
  const prepared = prepareWorkflow(workflow, catalog, {});
  if (prepared.ok) return { ok: true };
  return { ok: false, message: prepared.message, problems: prepared.problems.map((p) => ({ path: p.path.replace(/^workflow\./, ''), message: p.message })) };
}

function greeting() {
  const wf = createWorkflow();
  const template = wf.addInput('template', 'TEXT', { default: 'Hello, {{name}}', label: 'Template' });
  const person = wf.addInput('person', 'STRUCTURED');
  const blank = wf.addConst('blank', 'TEXT', 'empty');
  const fill = wf.addNode('text-template', { template, values: person, missing: blank });
  const split = wf.addNode('text-split', { text: fill.out.text, separator: ', ' });
  wf.addOutput('greeting', fill.out.text, { label: 'Greeting' });
  wf.addOutput('parts', split.port('count'));
  return { wf, fill, split };
}

describe('createWorkflow: building', () => {
  it('builds the plain v2 definition, in the order added, with references as ${id.port} strings', () => {
    const { wf } = greeting();
    expect(wf.toJSON()).toEqual({
      version: 2,
      nodes: [
        { id: 'template', uses: 'input', outputType: 'TEXT', label: 'Template', inputs: { default: 'Hello, {{name}}' } },
        { id: 'person', uses: 'input', outputType: 'STRUCTURED' },
        { id: 'blank', uses: 'const', outputType: 'TEXT', inputs: { value: 'empty' } },
        { id: 'text_template', uses: 'text-template', inputs: { template: '${template.value}', values: '${person.value}', missing: '${blank.value}' } },
        { id: 'text_split', uses: 'text-split', inputs: { text: '${text_template.text}', separator: ', ' } },
        { id: 'greeting', uses: 'output', label: 'Greeting', inputs: { value: '${text_template.text}' } },
        { id: 'parts', uses: 'output', inputs: { value: '${text_split.count}' } },
      ],
    });
    expect(JSON.parse(JSON.stringify(wf))).toEqual(wf.toJSON());
  });

  it('makes a definition the contract schema and the engine accept with the real specs', async () => {
    const { wf } = greeting();
    const json = wf.toJSON();
    expect(validate(WorkflowSchema, json).ok).toBe(true);
    const check = validateWorkflow(json, catalog);
    expect(check.ok ? 'ok' : check.message).toBe('ok');
    expect(wf.validate()).toEqual({ ok: true });
    await expect(wf.validate({ client: fakeClient() })).resolves.toEqual({ ok: true });
  });

  it('generates readable unique ids, or takes the given one', () => {
    const wf = createWorkflow();
    wf.addInput('math_add', 'FLOAT');
    expect(wf.addNode('math-add', { a: 1, b: 2 }).id).toBe('math_add_2');
    expect(wf.addNode('math-add', { a: 1, b: 2 }).id).toBe('math_add_3');
    expect(wf.addNode('acme/greet@latest').id).toBe('greet');
    expect(wf.addNode('3d-thing').id).toBe('node_3d_thing');
    expect(wf.addNode('math-add', {}, { id: 'sum', label: 'Sum' }).id).toBe('sum');
    expect(() => wf.addNode('math-add', {}, { id: 'sum' })).toThrow('addNode: id "sum" is already used by the math-add node "sum"');
  });

  it('gives port references through port() and out, the same object each time', () => {
    const wf = createWorkflow();
    const node = wf.addNode('text-split', { text: 'a,b' }, { id: 'split' });
    expect(node.out.parts).toBe(node.port('parts'));
    expect(isPortReference(node.out.parts)).toBe(true);
    expect(String(node.out.parts)).toBe('${split.parts}');
    expect(`${node.out.count}`).toBe('${split.count}');
    expect({ nodeId: node.out.count!.nodeId, port: node.out.count!.port }).toEqual({ nodeId: 'split', port: 'count' });
    // Keys no reference can carry read as undefined: inspecting a handle does not throw.
    expect((node.out as Record<string | symbol, unknown>)[Symbol.iterator]).toBeUndefined();
    expect(node.out.$$typeof).toBeUndefined();
    expect(() => node.port('no good')).toThrow('port: "no good" is not a port name');
  });

  it('connect sets an input to a reference, replacing a literal', () => {
    const wf = createWorkflow();
    const count = wf.addInput('count', 'INT', { default: 3 });
    const add = wf.addNode('math-add', { a: 1, b: 2 }, { id: 'add' });
    wf.connect(count, add, 'a');
    wf.connect('${count.value}', add, 'b');
    wf.addOutput('sum', add.out.result);
    expect(wf.toJSON().nodes[1]).toEqual({ id: 'add', uses: 'math-add', inputs: { a: '${count.value}', b: '${count.value}' } });
    expect(wf.validate()).toEqual({ ok: true });
  });

  it('copies literals: changing the caller object or the returned JSON does not change the draft', () => {
    const wf = createWorkflow();
    const values = { name: 'Ada' };
    wf.addNode('text-template', { template: '{{name}}', values }, { id: 'fill' });
    values.name = 'Grace';
    const json = wf.toJSON();
    (json.nodes[0]!.inputs!.values as { name: string }).name = 'Linus';
    expect(wf.toJSON().nodes[0]!.inputs!.values).toEqual({ name: 'Ada' });
  });

  it('leaves out inputs given as undefined', () => {
    const wf = createWorkflow();
    wf.addNode('text-split', { text: 'a', separator: undefined }, { id: 'split' });
    expect(wf.toJSON().nodes[0]).toEqual({ id: 'split', uses: 'text-split', inputs: { text: 'a' } });
  });
});

describe('createWorkflow: misuse throws at once', () => {
  it('refuses duplicate and invalid names', () => {
    const wf = createWorkflow();
    wf.addInput('text', 'TEXT');
    expect(() => wf.addInput('text', 'TEXT')).toThrow('addInput: id "text" is already used by the input node "text"');
    expect(() => wf.addOutput('text', 'x')).toThrow('addOutput: id "text" is already used');
    expect(() => wf.addConst('text', 'INT', 1)).toThrow('addConst: id "text" is already used');
    expect(() => wf.addInput('2nd', 'TEXT')).toThrow('addInput: input name "2nd" must start with a letter or "_"');
    expect(() => wf.addInput('a.b', 'TEXT')).toThrow('must start with a letter or "_"');
    expect(() => wf.addOutput('my__out', 'x')).toThrow('addOutput: output name "my__out" contains "__", which is reserved');
    expect(() => wf.addNode('math-add', {}, { id: '' })).toThrow('addNode: node id "" must start');
  });

  it('refuses connectors the format does not allow on input and const nodes', () => {
    const wf = createWorkflow();
    expect(() => wf.addInput('x', 'CUSTOM:thing' as 'TEXT')).toThrow('addInput: connector "CUSTOM:thing" must be one of IMAGE, TEXT');
    expect(() => wf.addConst('k', 'text' as 'TEXT', 'a')).toThrow('addConst: connector "text" must be one of');
  });

  it('refuses references from another builder and handles it did not make', () => {
    const one = createWorkflow();
    const two = createWorkflow();
    const text = one.addInput('text', 'TEXT');
    const node = one.addNode('text-split', { text });
    const other = two.addNode('text-split', { text: 'x' });
    expect(() => two.addNode('text-split', { text })).toThrow('addNode: input "text" of node "text_split_2": the reference ${text.value} was made by another workflow builder');
    expect(() => two.addOutput('out', node.out.parts)).toThrow('was made by another workflow builder');
    expect(() => two.connect(text, other, 'text')).toThrow('was made by another workflow builder');
    expect(() => one.connect(text, other, 'text')).toThrow('connect: the target node "text_split" was not added to this workflow builder');
    expect(() => one.connect('text.value', node, 'text')).toThrow('connect: "from" must be a port reference');
  });

  it('refuses a reference nested in a list, where the format would read it as plain text', () => {
    const wf = createWorkflow();
    const a = wf.addInput('a', 'TEXT');
    expect(() => wf.addNode('text-concat', { texts: [a, 'b'] })).toThrow('addNode: input "texts" of node "text_concat"[0] is the reference ${a.value}; a reference is read only as a whole input value');
  });

  it('refuses references as defaults and const values, interface uses in addNode, and non-JSON values', () => {
    const wf = createWorkflow();
    const a = wf.addInput('a', 'TEXT');
    expect(() => wf.addInput('b', 'TEXT', { default: a })).toThrow('addInput: the default of input "b" must be a literal value, not a reference');
    expect(() => wf.addConst('k', 'TEXT', a)).toThrow('must be a literal value, not a reference');
    expect(() => wf.addNode('output', {})).toThrow('addNode: "output" nodes are added with addOutput()');
    expect(() => wf.addNode('math-add', { a: Number.NaN })).toThrow('is NaN, which JSON cannot carry');
    expect(() => wf.addNode('math-add', { a: new Date(0) })).toThrow('is not a JSON value (Date)');
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => wf.addNode('json-stringify', { value: loop })).toThrow('contains itself');
  });
});

describe('createWorkflow: validate() offline', () => {
  it('does not need specs: unknown node ids and ports of platform nodes pass', () => {
    const wf = createWorkflow();
    const node = wf.addNode('no-such-node', { whatever: 1 });
    wf.addOutput('out', node.out.anything);
    expect(wf.validate()).toEqual({ ok: true });
  });

  it('reports structure with the messages the server gives', () => {
    const wf = createWorkflow();
    const a = wf.addNode('text-concat', { texts: 'x' }, { id: 'a' });
    const b = wf.addNode('text-concat', { texts: a.out.text }, { id: 'b' });
    wf.connect(b.out.text, a, 'texts');
    wf.addInput('n', 'INT', { default: 1.5 });
    wf.addNode('math-add', { a: '${n.number}', b: '${missing.value}' }, { id: 'add' });
    const result = wf.validate();
    expect(result).toEqual(serverSays(wf.toJSON()));
    expect(result.ok ? [] : result.problems.map((p) => p.message)).toEqual([
      'nodes[2] "n": inputs.default must be an INT (a whole number), got 1.5',
      'nodes[3] "add": input "a" refers to "n.number", but "n" has no port "number"; its ports are: value',
      'nodes[3] "add": input "b" refers to a node "missing" that does not exist',
      'the references form a cycle: a -> b -> a',
      'a workflow needs at least one output node ({ "uses": "output", "inputs": { "value": "${node.port}" } })',
    ]);
  });

  it('reports what the contract schema refuses, as the API does', () => {
    const wf = createWorkflow();
    wf.addOutput('out', 'x', { label: 'l'.repeat(501) });
    const result = wf.validate();
    expect(result.ok).toBe(false);
    expect(result).toEqual(serverSays(wf.toJSON()));
    expect(result.ok ? '' : result.message).toContain('nodes[0].label is 501 characters long');
  });
});

describe('createWorkflow: validate({ client }) online', () => {
  async function compare(build: (wf: ReturnType<typeof createWorkflow>) => void, expected: string[]) {
    const wf = createWorkflow();
    build(wf);
    const result = await wf.validate({ client: fakeClient() });
    expect(result).toEqual(serverSays(wf.toJSON()));
    expect(result.ok ? [] : result.problems.map((p) => p.message)).toEqual(expected);
  }

  it('reports an optionValues violation as the server does', async () => {
    await compare(
      (wf) => {
        const round = wf.addNode('math-round', { value: 2.5, mode: 'sideways' });
        wf.addOutput('out', round.out.result);
      },
      ['nodes[0] "math_round": input "mode" must be one of "nearest", "floor", "ceil", "trunc", got "sideways"'],
    );
  });

  it('reports a wrong port name, on either end, and a missing required input', async () => {
    await compare(
      (wf) => {
        const fill = wf.addNode('text-template', { templat: 'x' }, { id: 'fill' });
        wf.addOutput('out', fill.out.txt);
      },
      [
        'nodes[0] "fill": "text-template" has no input "templat"; its inputs are: template, values, missing',
        'nodes[0] "fill": input "template" (TEXT) is required',
        'nodes[1] "out": input "value" refers to "fill.txt", but "fill" has no port "txt"; its ports are: text',
      ],
    );
  });

  it('reports an incompatible connection', async () => {
    await compare(
      (wf) => {
        const split = wf.addNode('text-split', { text: 'a,b' }, { id: 'split' });
        const add = wf.addNode('math-add', { a: 1, b: 2 }, { id: 'add' });
        wf.connect(split.out.parts, add, 'a');
        wf.addOutput('out', add.out.result);
      },
      ['nodes[1] "add": input "a" (FLOAT) cannot take "split.parts" (list of TEXT)'],
    );
  });

  it('reports an unknown node id (a 404 from nodes.get)', async () => {
    await compare(
      (wf) => {
        const node = wf.addNode('text-upper', { text: 'x' });
        wf.addOutput('out', node.out.text);
      },
      ['nodes[0] "text_upper": "uses" names no known node "text-upper"; list nodes with GET /v1/nodes?q=<text>'],
    );
  });

  it('reports const values and input defaults outside the ports they feed', async () => {
    await compare(
      (wf) => {
        const mode = wf.addConst('mode', 'TEXT', 'sideways');
        const fmt = wf.addInput('fmt', 'TEXT', { default: 'gif' });
        const photo = wf.addInput('photo', 'IMAGE', { default: { kind: 'image', ref: 'https://example.com/a.png' } });
        const round = wf.addNode('math-round', { value: 1.5, mode }, { id: 'round' });
        const convert = wf.addNode('image-convert', { image: photo, format: fmt }, { id: 'convert' });
        wf.addOutput('out', round.out.result);
        wf.addOutput('image', convert.out.image);
      },
      [
        'nodes[3] "round": input "mode" (from const node "mode") must be one of "nearest", "floor", "ceil", "trunc", got "sideways"',
        'nodes[4] "convert": input "format" (from the default of input "fmt") must be one of "png", "jpeg", "webp", "avif", got "gif"',
      ],
    );
  });

  it('fetches each distinct platform spec once, with the signal, and no mounted workflow', async () => {
    const wf = createWorkflow();
    const a = wf.addNode('math-add', { a: 1, b: 2 });
    const b = wf.addNode('math-add', { a: a.out.result, b: 2 });
    const greet = wf.addNode('acme/greet', { name: { first: 'Ada' } });
    const loud = wf.addNode('text-regex-replace', { text: greet.out.text, pattern: '!$', replacement: '!!!' });
    wf.addOutput('sum', b.out.result);
    wf.addOutput('text', loud.out.text);
    const client = fakeClient();
    const controller = new AbortController();
    await expect(wf.validate({ client, signal: controller.signal })).resolves.toEqual({ ok: true });
    expect(client.calls.sort()).toEqual(['math-add', 'text-regex-replace']);
    expect(client.signals.every((s) => s === controller.signal)).toBe(true);
  });

  it('takes the SDK client as it is (checked by the compiler)', () => {
    const fits: (client: Client) => NodeSpecSource = (client) => client;
    expect(typeof fits).toBe('function');
  });

  it('rejects when nodes.get fails other than with a 404', async () => {
    const wf = createWorkflow();
    const node = wf.addNode('math-add', { a: 1, b: 2 });
    wf.addOutput('out', node.out.result);
    const failure = Object.assign(new Error('service unavailable'), { status: 503 });
    await expect(wf.validate({ client: fakeClient(() => failure) })).rejects.toBe(failure);
  });

  it('stops at the schema, as the API does, without fetching specs', async () => {
    const wf = createWorkflow();
    const node = wf.addNode('math-add', { a: 1, b: 2 }, { label: 'x'.repeat(600) });
    wf.addOutput('out', node.out.result);
    const client = fakeClient();
    const result = await wf.validate({ client });
    expect(result).toEqual(serverSays(wf.toJSON()));
    expect(client.calls).toEqual([]);
  });
});
