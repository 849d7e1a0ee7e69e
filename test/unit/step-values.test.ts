import type { Workflow } from '../../services/contract';
import { coerceToConnector, collectRunOutputs, MissingValueError, outputSources, prepareWorkflow, resolveStepInputs } from '../../services/engine';
import { createNodeCatalog } from '../../services/nodes';

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
    expect(() => resolveStepInputs(p.workflow.nodes.get('join')!, { ...values, stepOutputs: new Map() })).toThrow(MissingValueError);
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
