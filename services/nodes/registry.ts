import { createCatalog, type NodeCatalog } from './catalog';
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
