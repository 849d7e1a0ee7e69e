import type { Connection as FlowConnection, Edge as FlowEdge } from '@xyflow/react';
import type { StepViews } from '../runs/step-views';
import { connectorClass, type CardNode } from './node-card';
import { edgesOf, outputPortsWithReferences, portsOf, type Catalog, type Connection, type Graph, type NodeChange } from './model';
import type { NodeProblem } from './problems';

export interface Decorations {
  steps?: StepViews;
  changes?: Readonly<Record<string, NodeChange>>;
  problems?: ReadonlyMap<string, readonly NodeProblem[]>;
  selected?: readonly string[];
  editable: boolean;
}

/** The canvas's nodes and edges for a graph (positions from the layout, which must cover every node). */
export function toFlow(graph: Graph, catalog: Catalog, deco: Decorations): { nodes: CardNode[]; edges: FlowEdge[] } {
  const edges = edgesOf(graph.definition);
  const connected = new Map<string, Set<string>>();
  for (const e of edges) connected.set(e.target, (connected.get(e.target) ?? new Set()).add(e.targetPort));
  const selected = new Set(deco.selected ?? []);
  const byId = new Map(graph.definition.nodes.map((n) => [n.id, n]));
  const nodes: CardNode[] = graph.definition.nodes.map((node) => {
    const ports = { ...portsOf(node, catalog), outputs: outputPortsWithReferences(graph, node, catalog) };
    return {
      id: node.id,
      type: 'card',
      position: graph.layout.nodes[node.id] ?? { x: 0, y: 0 },
      selected: selected.has(node.id),
      data: {
        node,
        ports,
        step: deco.steps?.[node.id],
        change: deco.changes?.[node.id],
        problems: deco.problems?.get(node.id),
        connected: connected.get(node.id),
        editable: deco.editable,
      },
    };
  });
  const flowEdges: FlowEdge[] = edges.map((e) => {
    const source = byId.get(e.source)!;
    const port = portsOf(source, catalog).outputs.find((p) => p.name === e.sourcePort);
    const running = deco.steps?.[e.source]?.status === 'completed' && deco.steps?.[e.target]?.status === 'running';
    return {
      id: e.id,
      source: e.source,
      sourceHandle: `out:${e.sourcePort}`,
      target: e.target,
      targetHandle: `in:${e.targetPort}`,
      className: `edge ${connectorClass(port && !port.anyType ? port.connector.id : 'ANY')}`,
      animated: running,
      ariaLabel: `${e.source}.${e.sourcePort} to ${e.target}.${e.targetPort}`,
    };
  });
  return { nodes, edges: flowEdges };
}

/** The port a handle id names (`in:text`, `out:audio`), on the given side. */
export function parseHandle(handle: string | null | undefined, side: 'in' | 'out'): string | null {
  const prefix = `${side}:`;
  return handle?.startsWith(prefix) ? handle.slice(prefix.length) : null;
}

export function toConnection(c: FlowConnection | { source: string; target: string; sourceHandle?: string | null; targetHandle?: string | null }): Connection | null {
  const sourcePort = parseHandle(c.sourceHandle, 'out');
  const targetPort = parseHandle(c.targetHandle, 'in');
  if (!c.source || !c.target || !sourcePort || !targetPort) return null;
  return { source: c.source, sourcePort, target: c.target, targetPort };
}
