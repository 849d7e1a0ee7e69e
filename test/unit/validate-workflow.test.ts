import type { NodeSpec, Workflow } from '../../services/contract';
import { deriveInterface, planWorkflow, readySteps, validateWorkflow, type CheckedWorkflow } from '../../services/engine';
import { createCatalog } from '../../services/nodes';

const port = (name: string, id: string, extra: Record<string, unknown> = {}) => ({ name, connector: { id, isOptional: false, isArray: false, ...extra } });

const specs = createCatalog([
  {
    id: 'image-resize',
    kind: 'model',
    title: 'Resize',
    category: 'image',
    description: '',
    inputs: {
      image: port('image', 'IMAGE'),
      width: port('width', 'INT', { minValue: 1, maxValue: 8192 }),
      fit: port('fit', 'TEXT', { isOptional: true, defaultValue: 'cover', optionValues: ['cover', 'contain'] }),
    },
    outputs: { image: port('image', 'IMAGE') },
  },
  {
    id: 'text-template',
    kind: 'model',
    title: 'Template',
    category: 'text',
    description: '',
    inputs: { template: port('template', 'TEXT', { maxLength: 20 }), values: port('values', 'STRUCTURED', { isOptional: true }), tags: port('tags', 'TEXT', { isOptional: true, isArray: true, maxLength: 3 }) },
    outputs: { text: port('text', 'TEXT') },
  },
  {
    id: 'number-add',
    kind: 'model',
    title: 'Add',
    category: 'math',
    description: '',
    inputs: { a: port('a', 'FLOAT'), b: port('b', 'FLOAT') },
    outputs: { sum: port('sum', 'FLOAT'), rounded: port('rounded', 'INT') },
  },
] as NodeSpec[]);

const wf = (nodes: Workflow['nodes']): Workflow => ({ version: 2, nodes });
const out = (id: string, value: string) => ({ id, uses: 'output', inputs: { value } });

function ok(workflow: Workflow): CheckedWorkflow {
  const result = validateWorkflow(workflow, specs);
  if (!result.ok) throw new Error(`expected valid, got: ${result.message}`);
  return result.workflow;
}

function problems(workflow: Workflow): string[] {
  const result = validateWorkflow(workflow, specs);
  if (result.ok) throw new Error('expected problems, got a valid workflow');
  return result.problems.map((p) => p.message);
}

const valid = wf([
  { id: 'photo', uses: 'input', outputType: 'IMAGE', label: 'Photo' },
  { id: 'width', uses: 'input', outputType: 'INT', inputs: { default: 512 } },
  { id: 'greeting', uses: 'const', outputType: 'TEXT', inputs: { value: 'hello' } },
  { id: 'resize', uses: 'image-resize', inputs: { image: '${photo.value}', width: '${width.value}', fit: 'contain' } },
  { id: 'caption', uses: 'text-template', inputs: { template: '${greeting.value}', values: { w: '${width.value}' } } },
  { id: 'sub', uses: 'acme/upscale@latest', inputs: { image: '${resize.image}' } },
  out('image', '${sub.image}'),
  out('text', '${caption.text}'),
]);

describe('workflow validation accepts', () => {
  it('a graph with every kind of node', () => {
    const checked = ok(valid);
    expect([...checked.nodes.keys()]).toEqual(['photo', 'width', 'greeting', 'resize', 'caption', 'sub', 'image', 'text']);
    expect(checked.nodes.get('sub')?.role).toBe('mounted');
  });

  it('safe coercions: INT into FLOAT, INT into TEXT, a nested ${...} as plain data', () => {
    ok(wf([
      { id: 'n', uses: 'input', outputType: 'INT' },
      { id: 'add', uses: 'number-add', inputs: { a: '${n.value}', b: 2.5 } },
      { id: 't', uses: 'text-template', inputs: { template: '${add.rounded}', tags: ['a', 'b'] } },
      out('o', '${t.text}'),
    ]));
  });
});

describe('workflow validation rejects, naming the node and field', () => {
  it.each<[string, Workflow['nodes'], string]>([
    ['a duplicate id', [{ id: 'a', uses: 'input', outputType: 'TEXT' }, { id: 'a', uses: 'input', outputType: 'TEXT' }, out('o', '${a.value}')], 'nodes[1] "a": node id "a" is already used by nodes[0]'],
    ['an id unusable in references', [{ id: 'my node', uses: 'input', outputType: 'TEXT' }, out('o', 'x')], 'nodes[0]: node id "my node" must start with a letter'],
    ['an unknown platform node', [{ id: 'x', uses: 'image-blur' }, out('o', '${x.image}')], 'nodes[0] "x": "uses" names no known node "image-blur"'],
    ['a bad mounted workflow address', [{ id: 'x', uses: 'Acme/flow' }, out('o', '${x.image}')], 'nodes[0] "x": "uses" workflow reference "Acme/flow"'],
    ['an ambiguous mounted selector', [{ id: 'x', uses: 'acme/flow@2.5' }, out('o', '${x.image}')], 'ambiguous'],
    ['an input without outputType', [{ id: 'p', uses: 'input' }, out('o', '${p.value}')], 'nodes[0] "p": an input node needs "outputType"'],
    ['a const without value', [{ id: 'c', uses: 'const', outputType: 'TEXT' }, out('o', '${c.value}')], 'nodes[0] "c": a const node needs inputs.value'],
    ['a const of the wrong type', [{ id: 'c', uses: 'const', outputType: 'INT', inputs: { value: 'ten' } }, out('o', '${c.value}')], 'nodes[0] "c": inputs.value must be an INT (a whole number), got "ten"'],
    ['an input default of the wrong type', [{ id: 'p', uses: 'input', outputType: 'BOOLEAN', inputs: { default: 'yes' } }, out('o', '${p.value}')], 'inputs.default must be a BOOLEAN, got "yes"'],
    ['an output without value', [{ id: 'o', uses: 'output' }], 'nodes[0] "o": an output node needs inputs.value'],
    ['outputType on a platform node', [{ id: 'c', uses: 'const', outputType: 'TEXT', inputs: { value: 'x' } }, { id: 't', uses: 'text-template', outputType: 'TEXT', inputs: { template: '${c.value}' } }, out('o', '${t.text}')], '"outputType" belongs on input and const nodes only'],
    ['an unknown input port', [{ id: 't', uses: 'text-template', inputs: { template: 'x', colour: 'red' } }, out('o', '${t.text}')], 'nodes[0] "t": "text-template" has no input "colour"; its inputs are: template, values, tags'],
    ['a missing required port', [{ id: 'r', uses: 'image-resize', inputs: { width: 10 } }, out('o', '${r.image}')], 'nodes[0] "r": input "image" (IMAGE) is required'],
    ['a number out of bounds', [{ id: 'p', uses: 'input', outputType: 'IMAGE' }, { id: 'resize', uses: 'image-resize', inputs: { image: '${p.value}', width: 0 } }, out('o', '${resize.image}')], 'nodes[1] "resize": input "width" must be an INT between 1 and 8192, got 0'],
    ['a value outside optionValues', [{ id: 'p', uses: 'input', outputType: 'IMAGE' }, { id: 'r', uses: 'image-resize', inputs: { image: '${p.value}', width: 5, fit: 'stretch' } }, out('o', '${r.image}')], 'input "fit" must be one of "cover", "contain", got "stretch"'],
    ['a text over its maxLength', [{ id: 't', uses: 'text-template', inputs: { template: 'x'.repeat(21) } }, out('o', '${t.text}')], 'nodes[0] "t": input "template" must be a TEXT of at most 20 characters, got 21'],
    ['a list item over its maxLength', [{ id: 't', uses: 'text-template', inputs: { template: 'x', tags: ['ok', 'long'] } }, out('o', '${t.text}')], 'input "tags" item 1 must be a TEXT of at most 3 characters, got 4'],
    ['a scalar where a list is wanted', [{ id: 't', uses: 'text-template', inputs: { template: 'x', tags: 'a' } }, out('o', '${t.text}')], 'input "tags" must be a list of TEXT'],
    ['a literal where an artifact is wanted', [{ id: 'r', uses: 'image-resize', inputs: { image: 'cat.png', width: 5 } }, out('o', '${r.image}')], 'input "image" must be an artifact'],
    ['a reference to a missing node', [out('o', '${ghost.value}')], 'nodes[0] "o": input "value" refers to a node "ghost" that does not exist'],
    ['a reference to a missing port', [{ id: 'p', uses: 'input', outputType: 'TEXT' }, out('o', '${p.text}')], 'refers to "p.text", but "p" has no port "text"; its ports are: value'],
    ['a broken reference', [{ id: 'p', uses: 'input', outputType: 'TEXT' }, out('o', '${p}')], 'looks like a reference but is not one'],
    ['incompatible connectors', [{ id: 'p', uses: 'input', outputType: 'TEXT' }, { id: 'r', uses: 'image-resize', inputs: { image: '${p.value}', width: 1 } }, out('o', '${r.image}')], 'input "image" (IMAGE) cannot take "p.value" (TEXT)'],
    ['a reference to an output node', [{ id: 'p', uses: 'input', outputType: 'TEXT' }, out('a', '${p.value}'), out('b', '${a.value}')], 'refers to output node "a"'],
    ['no output node', [{ id: 'p', uses: 'input', outputType: 'TEXT' }], 'a workflow needs at least one output node'],
  ])('%s', (_name, nodes, expected) => {
    expect(problems(wf(nodes)).join('\n')).toContain(expected);
  });

  it('a reference cycle, naming its nodes', () => {
    const found = problems(wf([
      { id: 'a', uses: 'number-add', inputs: { a: '${c.sum}', b: 1 } },
      { id: 'b', uses: 'number-add', inputs: { a: '${a.sum}', b: 1 } },
      { id: 'c', uses: 'number-add', inputs: { a: '${b.sum}', b: 1 } },
      out('o', '${c.sum}'),
    ]));
    expect(found).toContain('the references form a cycle: a -> c -> b -> a');
  });

  it('a node that exists but is not offered here, saying what installs or enables it', () => {
    const withUnavailable = createCatalog(specs.list(), [
      { id: 'speech-espeak', reason: 'install espeak-ng (make system-deps, or apt-get install espeak-ng)' },
      { id: 'openai-chat', reason: 'set OPENAI_API_KEY' },
      // Offered and listed as unavailable: offered wins (an embedding supplies its own definition).
      { id: 'text-template', reason: 'set NOTHING' },
    ]);
    const check = validateWorkflow(wf([
      { id: 'say', uses: 'speech-espeak', inputs: { text: 'hi' } },
      { id: 'ask', uses: 'openai-chat', inputs: { prompt: 'hi' } },
      { id: 't', uses: 'text-template', inputs: { template: 'x' } },
      out('o', '${t.text}'),
    ]), withUnavailable);
    expect(check.ok ? [] : check.problems.map((p) => p.message)).toEqual([
      'nodes[0] "say": node "speech-espeak" exists but is not installed on this server: install espeak-ng (make system-deps, or apt-get install espeak-ng)',
      'nodes[1] "ask": node "openai-chat" exists but is not enabled on this server: set OPENAI_API_KEY',
    ]);
  });

  it('every problem at once', () => {
    const found = problems(wf([{ id: 'x', uses: 'nope' }, { id: 'x', uses: 'input' }, { id: 'c', uses: 'const', outputType: 'INT', inputs: { value: 1.5 } }]));
    expect(found.length).toBeGreaterThanOrEqual(4);
  });
});

describe('interface and plan', () => {
  it('derives inputs (required unless defaulted) and outputs with their connectors', () => {
    const iface = deriveInterface(ok(valid));
    expect(iface.inputs).toEqual([
      { id: 'photo', connector: 'IMAGE', required: true, label: 'Photo' },
      { id: 'width', connector: 'INT', required: false, default: 512 },
    ]);
    expect(iface.outputs).toEqual([{ name: 'image', connector: null }, { name: 'text', connector: 'TEXT' }]);
  });

  it('plans only executable nodes, in dependency order, and says what is ready', () => {
    const plan = planWorkflow(ok(valid));
    expect(plan.order).toEqual(['resize', 'caption', 'sub']);
    expect(plan.initial).toEqual(['resize', 'caption']);
    expect(plan.steps.get('sub')?.dependsOn).toEqual(['resize']);
    expect(readySteps(plan, new Set())).toEqual(['resize', 'caption']);
    expect(readySteps(plan, new Set(['resize']))).toEqual(['caption', 'sub']);
    expect(readySteps(plan, new Set(['resize', 'caption', 'sub']))).toEqual([]);
  });
});
