import { createCatalog, type NodeCatalog, type UnavailableNode } from './catalog';
import { IMAGE_NODES } from './image-nodes';
import { JSON_NODES } from './json-nodes';
import { MATH_NODES } from './math-nodes';
import type { NodeDefinition } from './node-definition';
import { TEXT_NODES } from './text-nodes';

/** Every platform node, in palette order: text, JSON, math, image. */
export const PLATFORM_NODES: readonly NodeDefinition[] = [...TEXT_NODES, ...JSON_NODES, ...MATH_NODES, ...IMAGE_NODES];

const byId = new Map<string, NodeDefinition>();
for (const node of PLATFORM_NODES) {
  // Checked at load: a duplicated id would make one node unreachable.
  if (byId.has(node.spec.id)) throw new Error(`duplicate platform node id "${node.spec.id}"`);
  byId.set(node.spec.id, node);
}

/** The palette served by `nodes.list` and `nodes.get`, and the spec lookup for workflow validation. */
export function createNodeCatalog(): NodeCatalog {
  return createCatalog(PLATFORM_NODES.map((node) => node.spec));
}

/** The definition of a platform node (to estimate, price and execute it), or undefined for an unknown id. */
export function findNode(id: string): NodeDefinition | undefined {
  return byId.get(id);
}

const LOCAL_NODE_IDS: ReadonlySet<string> = new Set(PLATFORM_NODES.map((node) => node.spec.id));

/**
 * Whether a node runs in-process with bounded work (every local platform node: text, JSON, math,
 * image operations), so a step of it may run inline right after its predecessor. Provider nodes
 * (remote calls that may take minutes) are not local.
 */
export function isLocalNode(id: string): boolean {
  return LOCAL_NODE_IDS.has(id);
}

/** The nodes one process can run: the platform's, plus those its configuration adds. */
export interface NodeRegistry {
  /** The palette (`nodes.list`, `nodes.get`) and the spec lookup for validation. */
  catalog: NodeCatalog;
  find(id: string): NodeDefinition | undefined;
  /** What installs or enables a node that exists but is not offered here (see `NodeCatalog.unavailable`). */
  unavailable(id: string): string | undefined;
  /** Whether a step of the node may run inline after its predecessor (see `isLocalNode`). */
  mayRunInline(id: string): boolean;
}

/**
 * A registry of the platform nodes and `extra` ones (providers with a configured key, local tools
 * that are installed), knowing of the `unavailable` ones (a workflow naming one is told what
 * installs it, not that the node does not exist). Extra nodes never run inline: they call out to
 * other processes or hosts and may take minutes, so each gets its own job.
 */
export function createNodeRegistry(extra: readonly NodeDefinition[] = [], unavailable: readonly UnavailableNode[] = []): NodeRegistry {
  const all = [...PLATFORM_NODES, ...extra];
  const definitions = new Map<string, NodeDefinition>();
  for (const node of all) {
    if (definitions.has(node.spec.id)) throw new Error(`duplicate node id "${node.spec.id}"`);
    definitions.set(node.spec.id, node);
  }
  const catalog = createCatalog(all.map((node) => node.spec), unavailable);
  return {
    catalog,
    find: (id) => definitions.get(id),
    unavailable: (id) => catalog.unavailable(id),
    mayRunInline: (id) => isLocalNode(id) || definitions.get(id)?.inline === true,
  };
}
