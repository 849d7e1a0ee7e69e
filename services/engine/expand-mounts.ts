import type { GraphNode, Workflow } from '../contract';
import { NODE_ID_PATTERN, parseReference } from './references';
import { MOUNT_SEPARATOR } from './mount-separator';
import { parseWorkflowRef } from './workflow-ref';

/**
 * Mounted workflows: a node whose `uses` is `<org>/<slug>` (or `@latest`) runs that workflow's
 * latest version inside the run. The engine splices the mounted graph into the run's graph
 * before planning: its nodes join the run under the mount node's id (`<mount>__<node>`), its
 * input nodes take the mount node's inputs, and references to the mount node's ports read its
 * output nodes. One run, one plan, one cap: the mounted steps cost against the run's cap like any
 * other. Pinned selectors and recursion are refused with codes the run fails with.
 */


/** Latest definitions of mounted workflows, by address `<org>/<slug>`. */
export interface MountedDefinitions {
  get(address: string): Workflow | undefined;
}

export type MountProblemCode = 'mount_pinned' | 'mount_recursion' | 'mount_not_found' | 'mount_invalid';

export type ExpandResult = { ok: true; workflow: Workflow; mounted: boolean } | { ok: false; code: MountProblemCode; message: string };

class MountProblem extends Error {
  constructor(
    readonly code: MountProblemCode,
    message: string,
  ) {
    super(message);
  }
}

const MAX_DEPTH = 8;

function isMount(node: GraphNode): boolean {
  return node.uses !== 'input' && node.uses !== 'output' && node.uses !== 'const' && node.uses.includes('/');
}

/** The address a mount node runs, refusing pinned selectors (the spec: only `latest` runs). */
function mountAddress(node: GraphNode): string {
  const ref = parseWorkflowRef(node.uses);
  if (!ref.ok) throw new MountProblem('mount_invalid', `node "${node.id}": ${ref.message}`);
  if (ref.value.id.kind !== 'address') throw new MountProblem('mount_invalid', `node "${node.id}" mounts a workflow by UUID; mount it by its address <org-slug>/<workflow-slug>`);
  if (ref.value.selector.kind !== 'latest') {
    throw new MountProblem('mount_pinned', `node "${node.id}" mounts "${node.uses}", a pinned version; a mounted workflow always runs its latest version: write "${ref.value.id.org}/${ref.value.id.slug}" or "@latest"`);
  }
  return `${ref.value.id.org}/${ref.value.id.slug}`;
}

/** The addresses a workflow mounts directly (for the caller to resolve before expanding). */
export function mountedAddresses(workflow: Workflow): string[] {
  const found = new Set<string>();
  for (const node of workflow.nodes ?? []) {
    if (!isMount(node)) continue;
    const ref = parseWorkflowRef(node.uses);
    if (ref.ok && ref.value.id.kind === 'address') found.add(`${ref.value.id.org}/${ref.value.id.slug}`);
  }
  return [...found];
}

/** One level of the splice: how references of that level's nodes translate to the run's graph. */
interface Scope {
  prefix: string;
  /** Values of this level's input nodes: a literal, or a reference already in run terms. */
  inputs: Map<string, unknown>;
  /** Values of mount nodes' ports at this level, in run terms. */
  mountPorts: Map<string, Map<string, unknown>>;
  /** Ids of this level's const and step nodes (renamed with the prefix). */
  local: Set<string>;
}

/** A value of this level's graph in run terms: references renamed or replaced, literals kept. */
function translate(value: unknown, scope: Scope, where: string): unknown {
  const ref = parseReference(value);
  if (!ref) return value;
  if (scope.inputs.has(ref.nodeId)) return scope.inputs.get(ref.nodeId);
  const ports = scope.mountPorts.get(ref.nodeId);
  if (ports) {
    if (!ports.has(ref.port)) {
      throw new MountProblem('mount_invalid', `${where} reads "${ref.nodeId}.${ref.port}", but the workflow mounted as "${ref.nodeId}" has no output "${ref.port}"; its outputs are: ${[...ports.keys()].join(', ') || 'none'}`);
    }
    return ports.get(ref.port);
  }
  if (scope.local.has(ref.nodeId)) return `\${${scope.prefix}${ref.nodeId}.${ref.port}}`;
  return value; // an unknown node: validation of the run's graph reports it
}

/**
 * Splices one level. Returns the level's output values (in run terms) and pushes its step and
 * const nodes (renamed) onto `out`.
 */
function splice(workflow: Workflow, scope: Scope, lookup: MountedDefinitions, stack: string[], out: GraphNode[], top: boolean): Map<string, unknown> {
  const nodes = workflow.nodes ?? [];
  for (const node of nodes) {
    if (node.uses === 'const' || (node.uses !== 'input' && node.uses !== 'output' && !isMount(node))) scope.local.add(node.id);
  }
  const outputs = new Map<string, unknown>();
  // Mounts first: later nodes of this level may read their ports, whatever the definition order.
  for (const node of nodes) {
    if (!isMount(node)) continue;
    const address = mountAddress(node);
    if (stack.includes(address)) {
      throw new MountProblem('mount_recursion', `node "${node.id}" mounts "${address}", which is already being mounted (${[...stack, address].join(' → ')}); a workflow cannot mount itself, directly or indirectly`);
    }
    if (stack.length >= MAX_DEPTH) throw new MountProblem('mount_invalid', `mounted workflows are nested more than ${MAX_DEPTH} deep at node "${node.id}"`);
    const child = lookup.get(address);
    if (!child) throw new MountProblem('mount_not_found', `node "${node.id}" mounts "${address}", which has no published version`);
    const childInputs = new Map<string, unknown>();
    const given = node.inputs ?? {};
    const declared = new Set((child.nodes ?? []).filter((n) => n.uses === 'input').map((n) => n.id));
    for (const key of Object.keys(given)) {
      if (!declared.has(key)) throw new MountProblem('mount_invalid', `node "${node.id}": "${address}" has no input "${key}"; its inputs are: ${[...declared].join(', ') || 'none'}`);
    }
    for (const input of (child.nodes ?? []).filter((n) => n.uses === 'input')) {
      if (Object.hasOwn(given, input.id)) childInputs.set(input.id, translate(given[input.id], scope, `node "${node.id}" input "${input.id}"`));
      else if (input.inputs && Object.hasOwn(input.inputs, 'default')) childInputs.set(input.id, input.inputs.default);
      else throw new MountProblem('mount_invalid', `node "${node.id}": input "${input.id}" of "${address}" is required`);
    }
    const childScope: Scope = { prefix: `${scope.prefix}${node.id}${MOUNT_SEPARATOR}`, inputs: childInputs, mountPorts: new Map(), local: new Set() };
    scope.mountPorts.set(node.id, splice(child, childScope, lookup, [...stack, address], out, false));
  }
  for (const node of nodes) {
    if (isMount(node) || node.uses === 'input') {
      if (node.uses === 'input' && top) out.push(node);
      continue;
    }
    const where = `node "${scope.prefix}${node.id}"`;
    if (node.uses === 'output') {
      const value = translate(node.inputs?.value, scope, where);
      if (top) out.push({ ...node, inputs: { ...node.inputs, value } });
      else outputs.set(node.id, value);
      continue;
    }
    const inputs = Object.fromEntries(Object.entries(node.inputs ?? {}).map(([key, value]) => [key, translate(value, scope, `${where} input "${key}"`)]));
    out.push({ ...node, id: `${scope.prefix}${node.id}`, ...(node.inputs === undefined ? {} : { inputs }) });
  }
  return outputs;
}

/**
 * The run's graph with every mounted workflow spliced in. `lookup` must hold the latest
 * definition of every address mounted, at any depth (see `mountedAddresses`).
 */
export function expandMounts(workflow: Workflow, lookup: MountedDefinitions): ExpandResult {
  if (!(workflow.nodes ?? []).some(isMount)) return { ok: true, workflow, mounted: false };
  try {
    const out: GraphNode[] = [];
    splice(workflow, { prefix: '', inputs: new Map(), mountPorts: new Map(), local: new Set() }, lookup, [], out, true);
    const seen = new Set<string>();
    for (const node of out) {
      if (seen.has(node.id)) throw new MountProblem('mount_invalid', `node id "${node.id}" is used twice once mounted workflows are spliced in; rename the node`);
      if (!NODE_ID_PATTERN.test(node.id)) throw new MountProblem('mount_invalid', `mounted workflows are nested too deep: node id "${node.id.slice(0, 60)}…" is too long`);
      seen.add(node.id);
    }
    return { ok: true, workflow: { ...workflow, nodes: out }, mounted: true };
  } catch (err) {
    if (err instanceof MountProblem) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

/** The mount node a spliced node belongs to (the top-level one), and its id within it; null for the run's own nodes. */
export function mountOf(nodeId: string): { mountId: string; innerId: string } | null {
  const at = nodeId.indexOf(MOUNT_SEPARATOR);
  if (at <= 0) return null;
  return { mountId: nodeId.slice(0, at), innerId: nodeId.slice(at + MOUNT_SEPARATOR.length) };
}
