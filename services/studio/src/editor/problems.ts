import type { Workflow } from '../../../contract';

/** The server's validation problems of a saved draft, placed on the nodes and fields they name. */

export interface NodeProblem {
  nodeId: string | null;
  /** The field inside the node: an input name, `outputType`, `uses`, `id`, or null for the node as a whole. */
  field: string | null;
  path: string;
  message: string;
}

/**
 * Maps the server's problems (`nodes[2].inputs.width`) onto node ids of the definition that was
 * saved (indexes refer to it, not to later edits).
 */
export function mapProblems(definition: Workflow, problems: readonly { path: string; message: string }[]): NodeProblem[] {
  return problems.map((p) => {
    const m = /^nodes\[(\d+)\](?:\.(.*))?$/.exec(p.path);
    if (!m) return { nodeId: null, field: null, path: p.path, message: p.message };
    const node = definition.nodes[Number(m[1])];
    const rest = m[2] ?? '';
    const field = rest.startsWith('inputs.') ? rest.slice('inputs.'.length).split(/[.[]/)[0]! : rest === '' ? null : rest.split(/[.[]/)[0]!;
    return { nodeId: node?.id ?? null, field, path: p.path, message: p.message };
  });
}

export function problemsByNode(problems: readonly NodeProblem[]): Map<string, NodeProblem[]> {
  const map = new Map<string, NodeProblem[]>();
  for (const p of problems) if (p.nodeId) map.set(p.nodeId, [...(map.get(p.nodeId) ?? []), p]);
  return map;
}
