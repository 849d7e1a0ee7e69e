import type { NodeSpec, Workflow } from '../../services/contract';
import { coerceToConnector, collectRunOutputs, outputSources, prepareWorkflow, resolveStepInputs, type SpecLookup } from '../../services/engine';
import { createNodeCatalog } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';

const catalog = createNodeCatalog();

function prepared(workflow: Workflow, inputs: Record<string, { value?: unknown; ref?: string }> = {}) {
  const result = prepareWorkflow(workflow, catalog, inputs);
  if (!result.ok) throw new Error(result.message);
  return result;
}

describe('values flowing through a run', () => {
  it('coerces on the way into a port as docs/connectors.md allows', () => {
    expect(coerceToConnector(3, { id: 'TEXT', isOptional: false, isArray: false })).toBe('3');
    expect(coerceToConnector(2.5, { id: 'TEXT', isOptional: false, isArray: false })).toBe('2.5');
    expect(coerceToConnector(true, { id: 'TEXT', isOptional: false, isArray: false })).toBe('true');
    expect(coerceToConnector(3, { id: 'FLOAT', isOptional: false, isArray: false })).toBe(3);
    expect(coerceToConnector('a', { id: 'TEXT', isOptional: false, isArray: true })).toEqual(['a']);
    expect(coerceToConnector([1, 2], { id: 'TEXT', isOptional: false, isArray: true })).toEqual(['1', '2']);
    // STRUCTURED passes as it is: the node checks it against its connector.
    expect(coerceToConnector({ a: 1 }, { id: 'INT', isOptional: false, isArray: false })).toEqual({ a: 1 });
  });

  it('resolves a step’s inputs from literals, run inputs, consts and finished steps', () => {
    const { prepared: p, inputs } = prepared(
      {
        version: 2,
        nodes: [
          { id: 'n', uses: 'input', outputType: 'INT' },
          { id: 'sep', uses: 'const', outputType: 'TEXT', inputs: { value: '+' } },
          { id: 'add', uses: 'math-add', inputs: { a: '${n.value}', b: 1 } },
          { id: 'join', uses: 'text-concat', inputs: { texts: '${add.result}', separator: '${sep.value}' } },
          { id: 'o', uses: 'output', inputs: { value: '${join.text}' } },
        ],
      },
      { n: { value: 41 } },
    );
    const values = { workflow: p.workflow, inputs, stepOutputs: new Map([['add', { result: 42 }]]) };
    expect(resolveStepInputs(p.workflow.nodes.get('add')!, values)).toEqual({ a: 41, b: 1 });
    // A FLOAT result into a list of TEXT: wrapped and turned into its JSON text.
    expect(resolveStepInputs(p.workflow.nodes.get('join')!, values)).toEqual({ texts: ['42'], separator: '+' });
    expect(() => resolveStepInputs(p.workflow.nodes.get('join')!, { ...values, stepOutputs: new Map() })).toThrow(expect.objectContaining({ name: 'AppError', code: 'missing_value' }));
  });

  it('collects the run’s outputs as artifacts typed by their source, and names the steps they read', () => {
    const { prepared: p, inputs } = prepared(
      {
        version: 2,
        nodes: [
          { id: 'photo', uses: 'input', outputType: 'IMAGE' },
          { id: 'meta', uses: 'image-metadata', inputs: { image: '${photo.value}' } },
          { id: 'split', uses: 'text-split', inputs: { text: 'a,b', separator: ',' } },
          { id: 'width', uses: 'output', inputs: { value: '${meta.width}' } },
          { id: 'parts', uses: 'output', inputs: { value: '${split.parts}' } },
          { id: 'same', uses: 'output', inputs: { value: '${photo.value}' } },
          { id: 'note', uses: 'output', inputs: { value: 'fixed' } },
        ],
      },
      { photo: { ref: 'https://svc.test/blobs/x.png' } },
    );
    expect(outputSources(p.workflow).sort()).toEqual(['meta', 'split']);
    const stepOutputs = new Map<string, Record<string, unknown>>([
      ['meta', { width: 10, height: 5, metadata: {} }],
      ['split', { parts: ['a', 'b'], count: 2 }],
    ]);
    expect(collectRunOutputs({ workflow: p.workflow, inputs, stepOutputs })).toEqual({
      width: { kind: 'int', value: 10 },
      parts: { kind: 'structured', value: ['a', 'b'] },
      same: { kind: 'image', ref: 'https://svc.test/blobs/x.png' },
      note: { kind: 'text', value: 'fixed' },
    });
  });
});

describe('optional outputs a node did not produce', () => {
  // A node with an optional output without a default ("extra"), one with a default ("mode"), a required one ("main").
  const maker: NodeSpec = {
    id: 'maker',
    kind: 'model',
    title: 'Maker',
    category: 'test',
    description: 'test node',
    inputs: ports({}),
    outputs: ports({ main: connector('TEXT'), extra: connector('STRUCTURED', { isOptional: true }), mode: connector('TEXT', { defaultValue: 'plain' }) }),
  };
  const lookup: SpecLookup = { get: (id) => (id === 'maker' ? maker : catalog.get(id)) };
  function run(nodes: Workflow['nodes']) {
    const result = prepareWorkflow({ version: 2, nodes }, lookup, {});
    if (!result.ok) throw new Error(result.message);
    return { workflow: result.prepared.workflow, inputs: result.inputs, stepOutputs: new Map([['m', { main: 'hello' }]]) };
  }

  it('leaves a run output absent, and reads a port default where there is one', () => {
    const values = run([
      { id: 'm', uses: 'maker' },
      { id: 'main', uses: 'output', inputs: { value: '${m.main}' } },
      { id: 'extra', uses: 'output', inputs: { value: '${m.extra}' } },
      { id: 'mode', uses: 'output', inputs: { value: '${m.mode}' } },
    ]);
    expect(collectRunOutputs(values)).toEqual({ main: { kind: 'text', value: 'hello' }, mode: { kind: 'text', value: 'plain' } });
  });

  it('omits an optional input that reads it, and fails a required one with missing_output naming node and port', () => {
    const values = run([
      { id: 'm', uses: 'maker' },
      { id: 'x', uses: 'json-extract', inputs: { data: '${m.extra}', path: 'a', fallback: '${m.extra}' } },
      { id: 'o', uses: 'output', inputs: { value: '${x.value}' } },
    ]);
    const x = values.workflow.nodes.get('x')!;
    expect(() => resolveStepInputs(x, values)).toThrow(expect.objectContaining({ name: 'AppError', code: 'missing_output' }));
    expect(() => resolveStepInputs(x, values)).toThrow('node "m" completed without its output "extra"');
    const optionalOnly = run([
      { id: 'm', uses: 'maker' },
      { id: 'x', uses: 'json-extract', inputs: { data: { a: 1 }, path: 'a', fallback: '${m.extra}' } },
      { id: 'o', uses: 'output', inputs: { value: '${x.value}' } },
    ]);
    expect(resolveStepInputs(optionalOnly.workflow.nodes.get('x')!, optionalOnly)).toEqual({ data: { a: 1 }, path: 'a' });
  });

  it('fails a run output reading a required port the node did not produce', () => {
    const values = run([
      { id: 'm', uses: 'maker' },
      { id: 'o', uses: 'output', inputs: { value: '${m.main}' } },
    ]);
    expect(() => collectRunOutputs({ ...values, stepOutputs: new Map([['m', {}]]) })).toThrow(expect.objectContaining({ name: 'AppError', code: 'missing_output' }));
  });
});
