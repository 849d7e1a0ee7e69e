import fc from 'fast-check';
import { validate, WorkflowSchema, type NodeSpec, type Workflow } from '../../services/contract';
import { planWorkflow, validateWorkflow } from '../../services/engine';
import { createCatalog } from '../../services/nodes';

const port = (name: string, id: string, extra: Record<string, unknown> = {}) => ({ name, connector: { id, isOptional: false, isArray: false, ...extra } });
const specs = createCatalog([
  { id: 'math-add', kind: 'model', title: 'Add', category: 'math', description: '', inputs: { a: port('a', 'FLOAT'), b: port('b', 'FLOAT', { minValue: -1000, maxValue: 1000 }) }, outputs: { sum: port('sum', 'FLOAT') } },
] as NodeSpec[]);

/** A random valid DAG: each math node reads the input or any earlier math node. */
const validGraph = fc.integer({ min: 1, max: 40 }).chain((size) =>
  fc.tuple(
    fc.array(fc.tuple(fc.nat(), fc.nat(), fc.double({ min: -1000, max: 1000, noNaN: true }), fc.boolean()), { minLength: size, maxLength: size }),
    fc.nat(),
  ).map(([choices, outputPick]): Workflow => {
    const nodes: Workflow['nodes'] = [{ id: 'x', uses: 'input', outputType: 'FLOAT' }];
    for (let i = 0; i < choices.length; i++) {
      const [pa, pb, literal, useLiteral] = choices[i]!;
      const source = (pick: number) => (i === 0 || pick % (i + 1) === i ? '${x.value}' : `\${n${pick % i}.sum}`);
      nodes.push({ id: `n${i}`, uses: 'math-add', inputs: { a: source(pa), b: useLiteral ? literal : source(pb) } });
    }
    nodes.push({ id: 'out', uses: 'output', inputs: { value: `\${n${outputPick % choices.length}.sum}` } });
    return { version: 2, nodes };
  }),
);

type Mutation = (w: Workflow, pick: number) => Workflow;
const mathNodes = (w: Workflow) => w.nodes.filter((n) => n.uses === 'math-add');
const clone = (w: Workflow): Workflow => JSON.parse(JSON.stringify(w)) as Workflow;

/** Mutations that always make a valid graph invalid. */
const mutations: Record<string, Mutation> = {
  'reference to a missing node': (w, pick) => {
    const n = mathNodes(w)[pick % mathNodes(w).length]!;
    n.inputs!.a = '${ghost.sum}';
    return w;
  },
  'duplicate id': (w, pick) => {
    const n = mathNodes(w)[pick % mathNodes(w).length]!;
    w.nodes.push({ ...n });
    return w;
  },
  'wrong literal type': (w, pick) => {
    mathNodes(w)[pick % mathNodes(w).length]!.inputs!.b = 'seven';
    return w;
  },
  'literal out of bounds': (w, pick) => {
    mathNodes(w)[pick % mathNodes(w).length]!.inputs!.b = 5000;
    return w;
  },
  'unknown input port': (w, pick) => {
    mathNodes(w)[pick % mathNodes(w).length]!.inputs!.c = 1;
    return w;
  },
  'self reference': (w, pick) => {
    const n = mathNodes(w)[pick % mathNodes(w).length]!;
    n.inputs!.a = `\${${n.id}.sum}`;
    return w;
  },
  'missing required port': (w, pick) => {
    delete mathNodes(w)[pick % mathNodes(w).length]!.inputs!.a;
    return w;
  },
  'unknown platform node': (w, pick) => {
    mathNodes(w)[pick % mathNodes(w).length]!.uses = 'math-pow';
    return w;
  },
};

describe('workflow validation, property-based', () => {
  it('validates every random DAG and plans it in a topological order', () => {
    fc.assert(
      fc.property(validGraph, (workflow) => {
        const checked = validateWorkflow(workflow, specs);
        if (!checked.ok) throw new Error(checked.message);
        const plan = planWorkflow(checked.workflow);
        expect(plan.order).toHaveLength(mathNodes(workflow).length);
        const position = new Map(plan.order.map((id, i) => [id, i]));
        for (const step of plan.steps.values()) {
          for (const dep of step.dependsOn) expect(position.get(dep)!).toBeLessThan(position.get(step.nodeId)!);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('rejects every mutated graph with a message, never a crash', () => {
    fc.assert(
      fc.property(validGraph, fc.constantFrom(...Object.keys(mutations)), fc.nat(), (workflow, name, pick) => {
        const mutated = mutations[name]!(clone(workflow), pick);
        const checked = validateWorkflow(mutated, specs);
        expect(checked.ok).toBe(false);
        if (!checked.ok) {
          expect(checked.message.length).toBeGreaterThan(0);
          expect(checked.problems.every((p) => p.message && p.path)).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('never throws on any definition the contract schema accepts', () => {
    const anyNode = fc.record(
      {
        id: fc.oneof(fc.constantFrom('a', 'b', 'x', 'n0', 'out'), fc.string({ minLength: 1, maxLength: 6 })),
        uses: fc.constantFrom('input', 'output', 'const', 'math-add', 'acme/flow', 'acme/flow@2', 'bad@@', 'x/y/z'),
        inputs: fc.dictionary(fc.constantFrom('a', 'b', 'value', 'default', 'zzz'), fc.oneof(fc.jsonValue(), fc.constantFrom('${a.value}', '${b.sum}', '${x.value}', '${n0.sum}', '${out.value}', '${broken'))),
        outputType: fc.constantFrom('TEXT', 'INT', 'FLOAT', 'IMAGE', 'STRUCTURED'),
        label: fc.string(),
      },
      { requiredKeys: ['id', 'uses'] },
    );
    fc.assert(
      fc.property(fc.array(anyNode, { maxLength: 12 }), (nodes) => {
        const workflow = { version: 2, nodes } as Workflow;
        if (!validate(WorkflowSchema, workflow).ok) return;
        const checked = validateWorkflow(workflow, specs);
        if (checked.ok) planWorkflow(checked.workflow);
        else expect(checked.message).not.toBe('');
      }),
      { numRuns: 1000 },
    );
  });
});
