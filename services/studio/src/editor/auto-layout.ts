import dagre from '@dagrejs/dagre';
import type { Workflow } from '../../../contract';
import { edgesOf, type Catalog, type Layout, portsOf } from './model';

export const NODE_WIDTH = 220;

/** The drawn height of a node, roughly: its header and one row per port. */
export function nodeHeight(ports: number): number {
  return 64 + Math.max(1, ports) * 24;
}

/**
 * Lays the graph out left to right with dagre. With `onlyMissing`, nodes that have a position
 * keep it and only the others get one (placed by the layout of the whole graph).
 */
export function autoLayout(definition: Workflow, layout: Layout, catalog: Catalog, onlyMissing = false): Layout {
  const missing = definition.nodes.filter((n) => !layout.nodes[n.id]);
  if (onlyMissing && missing.length === 0) return layout;
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 40, ranksep: 70, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of definition.nodes) {
    const ports = portsOf(node, catalog);
    g.setNode(node.id, { width: NODE_WIDTH, height: nodeHeight(Math.max(ports.inputs.length, ports.outputs.length)) });
  }
  for (const edge of edgesOf(definition)) g.setEdge(edge.source, edge.target);
  dagre.layout(g);
  const placed: Layout['nodes'] = {};
  for (const node of definition.nodes) {
    const at = g.node(node.id);
    placed[node.id] = { x: Math.round(at.x - at.width / 2), y: Math.round(at.y - at.height / 2) };
  }
  if (!onlyMissing) return { nodes: placed };
  // Keep the placed ones; put the new ones below everything already on the canvas.
  const kept = Object.values(layout.nodes);
  const offsetY = kept.length > 0 ? Math.max(...kept.map((p) => p.y)) + 160 : 0;
  const next = { ...layout.nodes };
  for (const node of missing) next[node.id] = { x: placed[node.id]!.x, y: placed[node.id]!.y + offsetY };
  return { nodes: next };
}
