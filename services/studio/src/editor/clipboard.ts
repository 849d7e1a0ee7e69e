import type { GraphNode } from '../../../contract';
import { freshId, idBase, rewriteReferences, type Graph, type Position } from './model';

/** Copy and paste of nodes: what a copy holds, and pasting it with fresh ids. */

export interface Clipboard {
  nodes: GraphNode[];
  positions: Record<string, Position>;
}

export function copyNodes(graph: Graph, ids: Iterable<string>): Clipboard | null {
  const wanted = new Set(ids);
  const nodes = graph.definition.nodes.filter((n) => wanted.has(n.id));
  if (nodes.length === 0) return null;
  const positions: Record<string, Position> = {};
  for (const n of nodes) if (graph.layout.nodes[n.id]) positions[n.id] = graph.layout.nodes[n.id]!;
  return { nodes: structuredClone(nodes), positions };
}

/**
 * Pastes copies with fresh ids: references between pasted nodes follow the copies, references to
 * nodes outside the copy stay when that node still exists, others are dropped.
 */
export function pasteNodes(graph: Graph, clip: Clipboard, offset: Position = { x: 40, y: 40 }): { graph: Graph; ids: string[] } {
  const taken = new Set(graph.definition.nodes.map((n) => n.id));
  const renames = new Map<string, string>();
  for (const node of clip.nodes) {
    const id = freshId(node.id.replace(/_\d+$/, '') || idBase(node.uses), taken);
    taken.add(id);
    renames.set(node.id, id);
  }
  const existing = new Set(graph.definition.nodes.map((n) => n.id));
  const pasted = clip.nodes.map((node) =>
    rewriteReferences({ ...structuredClone(node), id: renames.get(node.id)! }, (ref) => {
      const inside = renames.get(ref.nodeId);
      if (inside) return { nodeId: inside, port: ref.port };
      return existing.has(ref.nodeId) ? ref : null;
    }),
  );
  const layoutNodes = { ...graph.layout.nodes };
  let i = 0;
  for (const node of clip.nodes) {
    const at = clip.positions[node.id] ?? { x: 0, y: i * 120 };
    layoutNodes[renames.get(node.id)!] = { x: at.x + offset.x, y: at.y + offset.y };
    i++;
  }
  return {
    ids: [...renames.values()],
    graph: { definition: { ...graph.definition, nodes: [...graph.definition.nodes, ...pasted] }, layout: { nodes: layoutNodes } },
  };
}

const CLIPBOARD_KEY = 'studio.editor.clipboard';

/** Copied nodes live in localStorage, so they paste into another workflow or tab too. */
export function writeClipboard(clip: Clipboard) {
  try {
    localStorage.setItem(CLIPBOARD_KEY, JSON.stringify(clip));
  } catch {
    // storage unavailable: nothing to paste later
  }
}

export function readClipboard(): Clipboard | null {
  try {
    const clip = JSON.parse(localStorage.getItem(CLIPBOARD_KEY) ?? 'null') as Clipboard | null;
    return clip && Array.isArray(clip.nodes) && clip.nodes.length > 0 ? clip : null;
  } catch {
    return null;
  }
}
