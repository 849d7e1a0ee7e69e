/**
 * Validation + planning time of large workflow graphs (goal: 1,000 nodes under 5 ms, 10,000
 * under 50 ms). Prints p50/p95/max over repeated runs after a warm-up.
 */
import type { NodeSpec, Workflow } from '../../services/contract';
import { validateInput } from '../../services/contract';
import { deriveInterface, planWorkflow, validateWorkflow } from '../../services/engine';
import { createCatalog } from '../../services/nodes';

const port = (name: string, id: string) => ({ name, connector: { id, isOptional: false, isArray: false } });
const specs = createCatalog([
  { id: 'math-add', kind: 'model', title: 'Add', category: 'math', description: '', inputs: { a: port('a', 'FLOAT'), b: port('b', 'FLOAT') }, outputs: { sum: port('sum', 'FLOAT') } },
] as NodeSpec[]);

/** A layered DAG: each node reads two nodes of the previous layers (wide and deep). */
function graph(size: number): Workflow {
  const nodes: Workflow['nodes'] = [
    { id: 'x', uses: 'input', outputType: 'FLOAT' },
    { id: 'y', uses: 'input', outputType: 'FLOAT', inputs: { default: 1 } },
  ];
  const ids: string[] = [];
  for (let i = 0; i < size - 3; i++) {
    const a = i < 2 ? "${x.value}" : `\${${ids[Math.max(0, i - 1 - (i % 7))]}.sum}`;
    const b = i < 2 ? '${y.value}' : `\${${ids[Math.floor(i / 2)]}.sum}`;
    const id = `n${i}`;
    ids.push(id);
    nodes.push({ id, uses: 'math-add', inputs: { a, b } });
  }
  nodes.push({ id: 'out', uses: 'output', inputs: { value: `\${${ids[ids.length - 1]}.sum}` } });
  return { version: 2, nodes };
}

function timed(label: string, runs: number, once: () => unknown): void {
  for (let i = 0; i < 5; i++) once();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    once();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((p, q) => p - q);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2);
  console.log(`${label}: p50 ${at(0.5)} ms  p95 ${at(0.95)} ms  max ${at(1)} ms  (${runs} runs)`);
}

function measure(size: number, runs: number): void {
  const workflow = graph(size);
  const body = { workflow };
  timed(`schema (ajv) ${String(size).padStart(6)} nodes`, runs, () => {
    if (!validateInput('runs.create', body).ok) throw new Error('schema rejected the graph');
  });
  const once = () => {
    const checked = validateWorkflow(workflow, specs);
    if (!checked.ok) throw new Error(checked.message);
    deriveInterface(checked.workflow);
    return planWorkflow(checked.workflow);
  };
  timed(`validate+plan ${String(size).padStart(6)} nodes`, runs, once);
}

measure(1_000, 200);
measure(10_000, 40);
