import type { BuiltinConnectorId, Connector, GraphNode, NodeSpec, Workflow } from '../../../contract';
import { BUILTIN_CONNECTOR_IDS } from '../../../contract';
import { checkLiteral, connectorsCompatible } from '../../../engine/connector-values';
import { formatReference, NODE_ID_PATTERN, parseReference } from '../../../engine/references';

/**
 * The editor's graph model as pure functions: a draft (the workflow definition, unchanged in
 * shape) and its layout (canvas positions by node id, saved beside it). Connections ARE the
 * definition's references: an edge from A's output `p` into B's input `q` is
 * `B.inputs.q = '${A.p}'`. Every operation returns a new graph and leaves its argument alone.
 */

/** How a node differs between two versions, for the history's diff. */
export type NodeChange = 'added' | 'removed' | 'changed';

export interface Position {
  x: number;
  y: number;
}
export interface Layout {
  nodes: Record<string, Position>;
}
export interface Graph {
  definition: Workflow;
  layout: Layout;
}

export type NodeRole = 'input' | 'const' | 'output' | 'mounted' | 'platform';

/** One port of a node as the canvas draws it. `anyType`: its type is known only at run time. */
export interface PortInfo {
  name: string;
  connector: Connector;
  anyType?: boolean;
}

export interface NodePorts {
  role: NodeRole;
  title: string;
  description?: string;
  inputs: PortInfo[];
  outputs: PortInfo[];
  /** The node's kind is not in the catalog (an unknown platform node, a mount not yet loaded). */
  unknown?: boolean;
}

/** The interface of a published workflow mounted as a node. */
export interface MountedInterface {
  title: string;
  inputs: PortInfo[];
  outputs: PortInfo[];
}

/** What the editor knows about the kinds of nodes: the platform catalog and loaded mounts, by `uses`. */
export interface Catalog {
  specs: ReadonlyMap<string, NodeSpec>;
  mounted: ReadonlyMap<string, MountedInterface>;
}

export const EMPTY_CATALOG: Catalog = { specs: new Map(), mounted: new Map() };
export const VALUE_PORT = 'value';
export const CONNECTOR_IDS: readonly BuiltinConnectorId[] = BUILTIN_CONNECTOR_IDS;

export function emptyWorkflow(): Workflow {
  return { version: 2, nodes: [] };
}

export function roleOf(uses: string): NodeRole {
  if (uses === 'input' || uses === 'output' || uses === 'const') return uses;
  return uses.includes('/') ? 'mounted' : 'platform';
}

const scalar = (id: Connector['id'], isOptional = false): Connector => ({ id, isOptional, isArray: false });
const ANY: Connector = scalar('STRUCTURED', true);

/** The connector of the literal an input node (`default`) or const node (`value`) holds. */
export function literalConnector(node: GraphNode): Connector {
  const role = roleOf(node.uses);
  return scalar(node.outputType ?? 'TEXT', role === 'input');
}

/** The literal field of an interface node: `default` of an input, `value` of a const. */
export function literalKey(node: GraphNode): 'default' | 'value' | null {
  const role = roleOf(node.uses);
  return role === 'input' ? 'default' : role === 'const' ? 'value' : null;
}

/** The ports of a node: from the catalog for platform nodes and mounts, fixed for interface nodes. */
export function portsOf(node: GraphNode, catalog: Catalog): NodePorts {
  const role = roleOf(node.uses);
  if (role === 'input' || role === 'const') {
    return {
      role,
      title: node.label || (role === 'input' ? 'Input' : 'Const'),
      inputs: [],
      outputs: [{ name: VALUE_PORT, connector: scalar(node.outputType ?? 'TEXT') }],
    };
  }
  if (role === 'output') {
    return { role, title: node.label || 'Output', inputs: [{ name: VALUE_PORT, connector: ANY, anyType: true }], outputs: [] };
  }
  if (role === 'mounted') {
    const mount = catalog.mounted.get(node.uses);
    if (mount) return { role, title: node.label || mount.title, inputs: mount.inputs, outputs: mount.outputs };
    return { role, title: node.label || node.uses, inputs: referencedInputs(node), outputs: [], unknown: true };
  }
  const spec = catalog.specs.get(node.uses);
  if (!spec) return { role, title: node.label || node.uses, inputs: referencedInputs(node), outputs: [], unknown: true };
  return {
    role,
    title: node.label || spec.title,
    description: spec.description,
    inputs: Object.values(spec.inputs).map((p) => ({ name: p.name, connector: p.connector })),
    outputs: Object.values(spec.outputs).map((p) => ({ name: p.name, connector: p.connector })),
  };
}

/** Ports of an unknown node: whatever its inputs name, so its connections still draw. */
function referencedInputs(node: GraphNode): PortInfo[] {
  return Object.keys(node.inputs ?? {}).map((name) => ({ name, connector: ANY, anyType: true }));
}

/** Output ports of a node, including ports that references use but the catalog does not know yet. */
export function outputPortsWithReferences(graph: Graph, node: GraphNode, catalog: Catalog): PortInfo[] {
  const outputs = [...portsOf(node, catalog).outputs];
  const known = new Set(outputs.map((p) => p.name));
  for (const other of graph.definition.nodes) {
    for (const value of Object.values(other.inputs ?? {})) {
      const ref = parseReference(value);
      if (ref && ref.nodeId === node.id && !known.has(ref.port)) {
        known.add(ref.port);
        outputs.push({ name: ref.port, connector: ANY, anyType: true });
      }
    }
  }
  return outputs;
}

// ---------------------------------------------------------------------------------------------
// Edges: derived from references

export interface Edge {
  id: string;
  source: string;
  sourcePort: string;
  target: string;
  targetPort: string;
}

export function edgeId(source: string, sourcePort: string, target: string, targetPort: string): string {
  return `${source}.${sourcePort}->${target}.${targetPort}`;
}

/** Every connection of the draft: each input that is a whole-string reference to an existing node. */
export function edgesOf(definition: Workflow): Edge[] {
  const ids = new Set(definition.nodes.map((n) => n.id));
  const edges: Edge[] = [];
  for (const node of definition.nodes) {
    for (const [key, value] of Object.entries(node.inputs ?? {})) {
      const ref = parseReference(value);
      if (ref && ids.has(ref.nodeId)) {
        edges.push({ id: edgeId(ref.nodeId, ref.port, node.id, key), source: ref.nodeId, sourcePort: ref.port, target: node.id, targetPort: key });
      }
    }
  }
  return edges;
}

// ---------------------------------------------------------------------------------------------
// Operations

function replaceNode(graph: Graph, id: string, change: (node: GraphNode) => GraphNode): Graph {
  let changed = false;
  const nodes = graph.definition.nodes.map((n) => {
    if (n.id !== id) return n;
    const next = change(n);
    if (next !== n) changed = true;
    return next;
  });
  return changed ? { ...graph, definition: { ...graph.definition, nodes } } : graph;
}

/** A readable id base for a new node of this kind: `speech-espeak` → `speech_espeak`, `acme/resize@1` → `resize`. */
export function idBase(uses: string): string {
  let base = uses.includes('/') ? uses.slice(uses.indexOf('/') + 1).split('@')[0]! : uses;
  base = base.replace(/[^A-Za-z0-9_]/g, '_').replace(/^[^A-Za-z_]+/, '');
  return base.slice(0, 60) || 'node';
}

/** An id not taken in `taken`: the base itself, then base_2, base_3… */
export function freshId(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) {
    const id = `${base}_${i}`;
    if (!taken.has(id)) return id;
  }
}

export interface NewNode {
  uses: string;
  outputType?: BuiltinConnectorId;
  label?: string;
  inputs?: Record<string, unknown>;
}

/** A sensible starting literal for a const node of a connector. */
export function defaultLiteral(id: BuiltinConnectorId): unknown {
  switch (id) {
    case 'TEXT': return '';
    case 'INT': case 'FLOAT': return 0;
    case 'BOOLEAN': return false;
    case 'EMBEDDING': return [];
    case 'STRUCTURED': return {};
    default: return null;
  }
}

export function addNode(graph: Graph, spec: NewNode, position: Position): { graph: Graph; id: string } {
  const taken = new Set(graph.definition.nodes.map((n) => n.id));
  const id = freshId(idBase(spec.uses), taken);
  const role = roleOf(spec.uses);
  const node: GraphNode = { id, uses: spec.uses };
  if (role === 'input' || role === 'const') node.outputType = spec.outputType ?? 'TEXT';
  if (spec.label) node.label = spec.label;
  const inputs = { ...(spec.inputs ?? {}) };
  if (role === 'const' && !('value' in inputs)) inputs.value = defaultLiteral(node.outputType!);
  if (Object.keys(inputs).length > 0) node.inputs = inputs;
  return {
    id,
    graph: {
      definition: { ...graph.definition, nodes: [...graph.definition.nodes, node] },
      layout: { nodes: { ...graph.layout.nodes, [id]: position } },
    },
  };
}

export interface Connection {
  source: string;
  sourcePort: string;
  target: string;
  targetPort: string;
}

/** Why a connection is refused, in words for the user; null when it is allowed. */
export function connectionProblem(graph: Graph, catalog: Catalog, c: Connection): string | null {
  const source = graph.definition.nodes.find((n) => n.id === c.source);
  const target = graph.definition.nodes.find((n) => n.id === c.target);
  if (!source || !target) return 'That node no longer exists.';
  if (source.id === target.id) return 'A node cannot feed itself.';
  const out = outputPortsWithReferences(graph, source, catalog).find((p) => p.name === c.sourcePort);
  const inp = portsOf(target, catalog).inputs.find((p) => p.name === c.targetPort);
  if (!out) return `"${source.id}" has no output "${c.sourcePort}".`;
  if (!inp) return `"${target.id}" has no input "${c.targetPort}".`;
  if (!out.anyType && !inp.anyType && !connectorsCompatible(out.connector, inp.connector)) {
    return `${source.id}.${out.name} (${showConnector(out.connector)}) cannot feed ${target.id}.${inp.name} (${showConnector(inp.connector)}).`;
  }
  if (reaches(graph.definition, target.id, source.id)) return `Connecting ${source.id} after ${target.id} would make a cycle.`;
  return null;
}

export function showConnector(c: Connector): string {
  return c.isArray ? `list of ${c.id}` : c.id;
}

/** Whether `to` is downstream of `from` (following references forward). */
function reaches(definition: Workflow, from: string, to: string): boolean {
  const consumers = new Map<string, string[]>();
  for (const node of definition.nodes) {
    for (const value of Object.values(node.inputs ?? {})) {
      const ref = parseReference(value);
      if (ref) consumers.set(ref.nodeId, [...(consumers.get(ref.nodeId) ?? []), node.id]);
    }
  }
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (id === to) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(consumers.get(id) ?? []));
  }
  return false;
}

/** Connects (an input holds one reference, so this replaces what the input had). */
export function connect(graph: Graph, c: Connection): Graph {
  return setInput(graph, c.target, c.targetPort, formatReference({ nodeId: c.source, port: c.sourcePort }));
}

export function disconnect(graph: Graph, target: string, targetPort: string): Graph {
  return setInput(graph, target, targetPort, undefined);
}

/** Sets (or with `undefined` removes) one input of a node. */
export function setInput(graph: Graph, nodeId: string, key: string, value: unknown): Graph {
  return replaceNode(graph, nodeId, (node) => {
    const inputs = { ...(node.inputs ?? {}) };
    if (value === undefined) delete inputs[key];
    else inputs[key] = value;
    const next: GraphNode = { ...node, inputs };
    if (Object.keys(inputs).length === 0) delete next.inputs;
    return next;
  });
}

/** Sets a node's label or outputType (undefined or '' removes the label). */
export function setNodeFields(graph: Graph, nodeId: string, fields: { label?: string | undefined; outputType?: BuiltinConnectorId }): Graph {
  return replaceNode(graph, nodeId, (node) => {
    const next: GraphNode = { ...node };
    if ('label' in fields) {
      if (fields.label) next.label = fields.label;
      else delete next.label;
    }
    if (fields.outputType) next.outputType = fields.outputType;
    return next;
  });
}

/**
 * Changes the type of an input or const node. A literal that no longer fits is replaced: a
 * const's value by the new type's starting value, an input's default removed.
 */
export function setOutputType(graph: Graph, nodeId: string, outputType: BuiltinConnectorId): Graph {
  return replaceNode(graph, nodeId, (node) => {
    const next: GraphNode = { ...node, outputType };
    const key = literalKey(node);
    if (key && node.inputs && Object.hasOwn(node.inputs, key) && literalProblem(scalar(outputType), node.inputs[key]) !== null) {
      const inputs = { ...node.inputs };
      if (key === 'value') inputs.value = defaultLiteral(outputType);
      else delete inputs.default;
      next.inputs = inputs;
      if (Object.keys(inputs).length === 0) delete next.inputs;
    }
    return next;
  });
}

/** Points a mounted-workflow node at another version selector: `<address>@<major | exact version>`. */
export function setMountVersion(graph: Graph, nodeId: string, selector: string): Graph {
  return replaceNode(graph, nodeId, (node) => {
    if (roleOf(node.uses) !== 'mounted') return node;
    const address = node.uses.split('@')[0]!;
    const uses = selector.trim() === '' ? address : `${address}@${selector.trim()}`;
    return uses === node.uses ? node : { ...node, uses };
  });
}

/** Why a new id cannot be used, or null. */
export function renameProblem(graph: Graph, from: string, to: string): string | null {
  if (to === from) return null;
  if (!NODE_ID_PATTERN.test(to)) return 'An id starts with a letter or _, then letters, digits, _ or - (at most 200).';
  if (graph.definition.nodes.some((n) => n.id === to)) return `There is already a node "${to}".`;
  return null;
}

/** Renames a node and rewrites every reference to it, and its layout entry. */
export function renameNode(graph: Graph, from: string, to: string): Graph {
  if (renameProblem(graph, from, to) !== null || from === to) return graph;
  const nodes = graph.definition.nodes.map((node) => {
    const renamed = node.id === from ? { ...node, id: to } : node;
    return rewriteReferences(renamed, (ref) => (ref.nodeId === from ? { nodeId: to, port: ref.port } : ref));
  });
  const layoutNodes = { ...graph.layout.nodes };
  if (layoutNodes[from]) {
    layoutNodes[to] = layoutNodes[from];
    delete layoutNodes[from];
  }
  return { definition: { ...graph.definition, nodes }, layout: { nodes: layoutNodes } };
}

export type RefMap = (ref: { nodeId: string; port: string }) => { nodeId: string; port: string } | null;

/** The node with each reference mapped to another (`null` drops that input). */
export function rewriteReferences(node: GraphNode, map: RefMap): GraphNode {
  if (!node.inputs) return node;
  let changed = false;
  const inputs: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node.inputs)) {
    const ref = parseReference(value);
    if (!ref) {
      inputs[key] = value;
      continue;
    }
    const next = map(ref);
    if (next === null) {
      changed = true;
      continue;
    }
    const formatted = formatReference(next);
    if (formatted !== value) changed = true;
    inputs[key] = formatted;
  }
  if (!changed) return node;
  const out: GraphNode = { ...node, inputs };
  if (Object.keys(inputs).length === 0) delete out.inputs;
  return out;
}

/** Deletes nodes and every connection into or out of them. */
export function deleteNodes(graph: Graph, ids: Iterable<string>): Graph {
  const gone = new Set(ids);
  if (gone.size === 0) return graph;
  const nodes = graph.definition.nodes
    .filter((n) => !gone.has(n.id))
    .map((n) => rewriteReferences(n, (ref) => (gone.has(ref.nodeId) ? null : ref)));
  const layoutNodes = Object.fromEntries(Object.entries(graph.layout.nodes).filter(([id]) => !gone.has(id)));
  return { definition: { ...graph.definition, nodes }, layout: { nodes: layoutNodes } };
}

/** Deletes one connection. */
export function deleteEdge(graph: Graph, edge: Pick<Edge, 'target' | 'targetPort'>): Graph {
  return disconnect(graph, edge.target, edge.targetPort);
}

export function moveNodes(graph: Graph, positions: Record<string, Position>): Graph {
  return { ...graph, layout: { nodes: { ...graph.layout.nodes, ...positions } } };
}

// ---------------------------------------------------------------------------------------------
// Literals

/** The problem with a literal for a connector, in the engine's words; null when fine. */
export function literalProblem(connector: Connector, value: unknown): string | null {
  if (parseReference(value) !== null) return null;
  try {
    return checkLiteral(connector, value);
  } catch {
    // The engine checks artifacts with a compiled schema, which a strict CSP may not allow.
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Mounted workflows

/** The interface of a published workflow as node ports: its input nodes in, its output nodes out. */
export function mountedInterface(title: string, workflow: Workflow, catalog: Catalog): MountedInterface {
  const byId = new Map(workflow.nodes.map((n) => [n.id, n]));
  const inputs: PortInfo[] = [];
  const outputs: PortInfo[] = [];
  for (const node of workflow.nodes) {
    if (node.uses === 'input') {
      const hasDefault = node.inputs !== undefined && Object.hasOwn(node.inputs, 'default');
      inputs.push({ name: node.id, connector: scalar(node.outputType ?? 'TEXT', hasDefault) });
    } else if (node.uses === 'output') {
      const ref = parseReference(node.inputs?.value);
      const source = ref ? byId.get(ref.nodeId) : undefined;
      let connector: Connector | null = null;
      if (source && ref) {
        const port = portsOf(source, catalog).outputs.find((p) => p.name === ref.port);
        if (port && !port.anyType) connector = port.connector;
      }
      outputs.push(connector ? { name: node.id, connector } : { name: node.id, connector: ANY, anyType: true });
    }
  }
  return { title, inputs, outputs };
}
