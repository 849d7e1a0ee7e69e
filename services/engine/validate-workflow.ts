import type { Connector, GraphNode, NodeSpec, Workflow } from '../contract';
import { BUILTIN_CONNECTOR_IDS } from '../contract';
import { checkLiteral, connectorsCompatible } from './connector-values';
import { looksLikeBrokenReference, NODE_ID_PATTERN, parseReference, type Reference } from './references';
import { ProblemList, type WorkflowProblem } from './workflow-problems';
import { parseWorkflowRef } from './workflow-ref';
import { MOUNT_SEPARATOR } from './mount-separator';

/** Port 1 of every input and const node. */
export const VALUE_PORT = 'value';

/** Options of {@link validateWorkflow}. */
export interface ValidateOptions {
  /** The graph has mounted workflows spliced in (`expandMounts`): node ids may contain `__`. */
  spliced?: boolean;
  /**
   * Platform nodes the lookup does not know are left unchecked instead of reported: their literals,
   * required ports, and the connectors of the references into and out of them. For drafts checked
   * without the catalog (the SDK's offline `validate()`); the server never sets it.
   */
  skipUnknownSpecs?: boolean;
}

/** Finds platform node specs by id (the node catalog). */
export interface SpecLookup {
  get(id: string): NodeSpec | undefined;
  /**
   * For a node that exists but is not offered by this server (its program is not installed, its
   * provider's key is not set): what installs or enables it. Lookups without it know only offered nodes.
   */
  unavailable?(id: string): string | undefined;
}

/** Why a node that exists cannot be used here, and what the operator does about it. */
export function unavailableNodeMessage(id: string, remedy: string): string {
  // "install espeak-ng (...)" is about a program; "set OPENAI_API_KEY" about a setting.
  const missing = /^install\b/.test(remedy) ? 'installed' : 'enabled';
  return `node "${id}" exists but is not ${missing} on this server: ${remedy}`;
}

export type NodeRole = 'input' | 'output' | 'const' | 'platform' | 'mounted';

/** A node after validation, with what it exposes. */
export interface CheckedNode {
  index: number;
  id: string;
  uses: string;
  role: NodeRole;
  label?: string;
  inputs: Record<string, unknown>;
  /** Platform nodes only. */
  spec?: NodeSpec;
  /** Output ports and their connectors; null for a mounted workflow (known only at run time). */
  outputs: Record<string, Connector> | null;
  /** References this node's inputs make (an array: cheaper than a Map per node in 10,000-node graphs). */
  references: InputReference[];
}

/** A reference made by one input of a node. */
export interface InputReference {
  input: string;
  ref: Reference;
}

/** The reference made by the named input, if any. */
export function referenceOf(node: CheckedNode, input: string): Reference | undefined {
  return node.references.find((r) => r.input === input)?.ref;
}

export interface CheckedWorkflow {
  nodes: Map<string, CheckedNode>;
  /** Definition order. */
  list: CheckedNode[];
}

export type WorkflowCheck = { ok: true; workflow: CheckedWorkflow } | { ok: false; problems: WorkflowProblem[]; message: string };

const INTERFACE_INPUT_KEYS: Record<'input' | 'const' | 'output', readonly string[]> = {
  input: ['default'],
  const: ['value'],
  output: ['value'],
};

const article = (role: string) => (role === 'input' || role === 'output' ? `an ${role}` : `a ${role}`);

const scalarConnector = (id: Connector['id']): Connector => ({ id, isOptional: false, isArray: false });

function roleOf(uses: string): NodeRole {
  if (uses === 'input' || uses === 'output' || uses === 'const') return uses;
  return uses.includes('/') ? 'mounted' : 'platform';
}

const MAX_MESSAGES = 20;

/** Joins problems into one message, cut after the first few. */
export function summarizeProblems(problems: readonly WorkflowProblem[]): string {
  const listed = problems.slice(0, MAX_MESSAGES).map((p) => p.message);
  if (problems.length > MAX_MESSAGES) listed.push(`and ${problems.length - MAX_MESSAGES} more problems`);
  return listed.join('; ');
}

const outputsBySpec = new WeakMap<NodeSpec, Record<string, Connector>>();

/** A spec's output connectors by port, computed once per spec (large graphs reuse few specs). */
function outputConnectors(spec: NodeSpec): Record<string, Connector> {
  let outputs = outputsBySpec.get(spec);
  if (!outputs) {
    outputs = Object.fromEntries(Object.entries(spec.outputs).map(([name, port]) => [name, port.connector]));
    outputsBySpec.set(spec, outputs);
  }
  return outputs;
}

function checkShape(node: GraphNode, index: number, role: NodeRole, specs: SpecLookup, options: ValidateOptions, problems: ProblemList): CheckedNode {
  const inputs = node.inputs ?? {};
  const checked: CheckedNode = { index, id: node.id, uses: node.uses, role, label: node.label, inputs, outputs: null, references: [] };

  if (role === 'input' || role === 'const') {
    if (!node.outputType || !(BUILTIN_CONNECTOR_IDS as readonly string[]).includes(node.outputType)) {
      problems.atNode(index, node.id, 'outputType', `${article(role)} node needs "outputType", one of ${BUILTIN_CONNECTOR_IDS.join(', ')}`);
    } else {
      checked.outputs = { [VALUE_PORT]: scalarConnector(node.outputType) };
    }
  } else if (role === 'output') {
    checked.outputs = {};
    if (node.outputType) problems.atNode(index, node.id, 'outputType', '"outputType" belongs on input and const nodes only');
  } else if (node.outputType) {
    problems.atNode(index, node.id, 'outputType', '"outputType" belongs on input and const nodes only');
  }

  if (role === 'input' || role === 'const' || role === 'output') {
    const allowed = INTERFACE_INPUT_KEYS[role];
    for (const key of Object.keys(inputs)) {
      if (!allowed.includes(key)) problems.atNode(index, node.id, `inputs.${key}`, `${article(role)} node takes only ${allowed.map((k) => `inputs.${k}`).join(', ')}, not inputs.${key}`);
    }
    if ((role === 'const' || role === 'output') && !Object.hasOwn(inputs, 'value')) problems.atNode(index, node.id, 'inputs.value', `${article(role)} node needs inputs.value`);
    const literalKey = role === 'input' ? 'default' : role === 'const' ? 'value' : null;
    if (literalKey && Object.hasOwn(inputs, literalKey)) {
      if (parseReference(inputs[literalKey]) !== null) problems.atNode(index, node.id, `inputs.${literalKey}`, `inputs.${literalKey} must be a literal value, not a reference`);
      else if (checked.outputs?.[VALUE_PORT]) {
        const problem = checkLiteral(checked.outputs[VALUE_PORT], inputs[literalKey]);
        if (problem) problems.atNode(index, node.id, `inputs.${literalKey}`, `inputs.${literalKey} ${problem}`);
      }
    }
    return checked;
  }

  if (role === 'mounted') {
    const ref = parseWorkflowRef(node.uses);
    if (!ref.ok) problems.atNode(index, node.id, 'uses', `"uses" ${ref.message}`);
    else if (ref.value.id.kind !== 'address') problems.atNode(index, node.id, 'uses', `a mounted workflow is named by its address <org-slug>/<workflow-slug>, not a UUID`);
    return checked;
  }

  const spec = specs.get(node.uses);
  if (!spec) {
    if (options.skipUnknownSpecs) return checked;
    const remedy = specs.unavailable?.(node.uses);
    if (remedy !== undefined) problems.atNode(index, node.id, 'uses', unavailableNodeMessage(node.uses, remedy));
    else problems.atNode(index, node.id, 'uses', `"uses" names no known node "${node.uses}"; list nodes with GET /v1/nodes?q=<text>`);
    return checked;
  }
  checked.spec = spec;
  checked.outputs = outputConnectors(spec);
  for (const [key, value] of Object.entries(inputs)) {
    // Own ports only: "__proto__", "constructor" or "toString" are unknown inputs, not Object's members.
    const port = Object.hasOwn(spec.inputs, key) ? spec.inputs[key] : undefined;
    if (!port) {
      problems.atNode(index, node.id, `inputs.${key}`, `"${spec.id}" has no input "${key}"; its inputs are: ${Object.keys(spec.inputs).join(', ') || 'none'}`);
      continue;
    }
    if (parseReference(value) !== null) continue;
    const problem = checkLiteral(port.connector, value);
    if (problem) problems.atNode(index, node.id, `inputs.${key}`, `input "${key}" ${problem}`);
  }
  for (const [name, port] of Object.entries(spec.inputs)) {
    if (!Object.hasOwn(inputs, name) && !port.connector.isOptional && port.connector.defaultValue === undefined) {
      problems.atNode(index, node.id, `inputs.${name}`, `input "${name}" (${port.connector.id}) is required`);
    }
  }
  return checked;
}

function showConnector(c: Connector): string {
  return c.isArray ? `list of ${c.id}` : c.id;
}

function checkReferences(nodes: Map<string, CheckedNode>, problems: ProblemList): void {
  for (const node of nodes.values()) {
    for (const key in node.inputs) {
      const value = node.inputs[key];
      const ref = parseReference(value);
      if (!ref) {
        if (looksLikeBrokenReference(value)) {
          problems.atNode(node.index, node.id, `inputs.${key}`, `input "${key}" looks like a reference but is not one: write \${<nodeId>.<port>}, got ${JSON.stringify(value)}`);
        }
        continue;
      }
      const source = nodes.get(ref.nodeId);
      if (!source) {
        problems.atNode(node.index, node.id, `inputs.${key}`, `input "${key}" refers to a node "${ref.nodeId}" that does not exist`);
        continue;
      }
      if (source.role === 'output') {
        problems.atNode(node.index, node.id, `inputs.${key}`, `input "${key}" refers to output node "${ref.nodeId}", which has no ports to read`);
        continue;
      }
      node.references.push({ input: key, ref });
      if (source.outputs === null) continue; // a mounted workflow: its ports are checked at run time
      // Own ports only: a reference may name "constructor" or "toString".
      const sourceConnector = Object.hasOwn(source.outputs, ref.port) ? source.outputs[ref.port] : undefined;
      if (!sourceConnector) {
        const ports = Object.keys(source.outputs);
        problems.atNode(node.index, node.id, `inputs.${key}`, `input "${key}" refers to "${ref.nodeId}.${ref.port}", but "${ref.nodeId}" has no port "${ref.port}"; its ports are: ${ports.join(', ') || 'none'}`);
        continue;
      }
      const targetConnector = node.spec && Object.hasOwn(node.spec.inputs, key) ? node.spec.inputs[key]!.connector : undefined;
      if (targetConnector && !connectorsCompatible(sourceConnector, targetConnector)) {
        problems.atNode(node.index, node.id, `inputs.${key}`, `input "${key}" (${showConnector(targetConnector)}) cannot take "${ref.nodeId}.${ref.port}" (${showConnector(sourceConnector)})`);
      }
    }
  }
}

/** Finds one reference cycle (as node ids, first repeated at the end) or null. Iterative DFS. */
function findCycle(nodes: Map<string, CheckedNode>): string[] | null {
  const state = new Map<string, 1 | 2>(); // 1: on the stack, 2: done
  for (const start of nodes.keys()) {
    if (state.has(start)) continue;
    const stack: { id: string; refs: InputReference[]; at: number }[] = [{ id: start, refs: nodes.get(start)!.references, at: 0 }];
    state.set(start, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.at === top.refs.length) {
        state.set(top.id, 2);
        stack.pop();
        continue;
      }
      const dep = top.refs[top.at++]!.ref.nodeId;
      const seen = state.get(dep);
      if (seen === 1) {
        const ids = stack.map((f) => f.id);
        return [...ids.slice(ids.indexOf(dep)), dep];
      }
      if (seen === undefined && nodes.has(dep)) {
        state.set(dep, 1);
        stack.push({ id: dep, refs: nodes.get(dep)!.references, at: 0 });
      }
    }
  }
  return null;
}

/**
 * Validates a workflow definition (schema version 2) against the node catalog and returns every
 * problem found, each naming its node and field. Mounted workflows are checked for syntax only;
 * they resolve at run time.
 */
export function validateWorkflow(workflow: Workflow, specs: SpecLookup, options: ValidateOptions = {}): WorkflowCheck {
  const problems = new ProblemList();
  if (workflow.version !== 2) problems.add('version', `"version" must be 2, got ${JSON.stringify(workflow.version)}`);
  if (!Array.isArray(workflow.nodes)) {
    problems.add('nodes', '"nodes" must be an array of nodes');
    return { ok: false, problems: problems.items, message: summarizeProblems(problems.items) };
  }

  const nodes = new Map<string, CheckedNode>();
  const list: CheckedNode[] = [];
  workflow.nodes.forEach((node, index) => {
    if (typeof node.id !== 'string' || !NODE_ID_PATTERN.test(node.id)) {
      problems.atNode(index, undefined, 'id', `node id ${JSON.stringify(node.id)} must start with a letter or "_" and contain only letters, digits, "_" and "-", so it can be used in \${id.port} references`);
      return;
    }
    if (!options.spliced && node.id.includes(MOUNT_SEPARATOR)) {
      problems.atNode(index, node.id, 'id', `node id "${node.id}" contains "${MOUNT_SEPARATOR}", which is reserved: it joins a mounted workflow's node ids to the id of the node that mounts it`);
      return;
    }
    const first = nodes.get(node.id);
    if (first) {
      problems.atNode(index, node.id, 'id', `node id "${node.id}" is already used by nodes[${first.index}]`);
      return;
    }
    const checked = checkShape(node, index, roleOf(node.uses), specs, options, problems);
    nodes.set(node.id, checked);
    list.push(checked);
  });

  checkReferences(nodes, problems);
  const cycle = findCycle(nodes);
  if (cycle) problems.add('nodes', `the references form a cycle: ${cycle.join(' -> ')}`);
  if (![...nodes.values()].some((n) => n.role === 'output')) {
    problems.add('nodes', 'a workflow needs at least one output node ({ "uses": "output", "inputs": { "value": "${node.port}" } })');
  }

  if (!problems.empty) return { ok: false, problems: problems.items, message: summarizeProblems(problems.items) };
  return { ok: true, workflow: { nodes, list } };
}
