import type { NodeSpec } from '../contract';

/** The node palette: every platform node's published interface. */
export interface NodeCatalog {
  list(): readonly NodeSpec[];
  get(id: string): NodeSpec | undefined;
  /**
   * For a node that exists but is not offered here (its program is not installed, its provider's
   * key is not set): what installs or enables it. Undefined for offered and unknown ids.
   */
  unavailable(id: string): string | undefined;
}

/** A node this server knows of but does not offer, and what installs or enables it. */
export interface UnavailableNode {
  id: string;
  /** What the operator does to offer it, e.g. "set OPENAI_API_KEY" or "install espeak-ng (make system-deps)". */
  reason: string;
}

export interface NodeQuery {
  q?: string;
  category?: string;
  limit?: number;
}

/**
 * A catalog over a fixed list of specs, in the order given, knowing of the `unavailable` nodes
 * (an id that is also offered is offered: an embedding may supply its own definition).
 */
export function createCatalog(specs: readonly NodeSpec[], unavailable: readonly UnavailableNode[] = []): NodeCatalog {
  const byId = new Map(specs.map((spec) => [spec.id, spec]));
  if (byId.size !== specs.length) throw new Error('node catalog has duplicate node ids');
  const reasons = new Map(unavailable.filter((node) => !byId.has(node.id)).map((node) => [node.id, node.reason]));
  return { list: () => specs, get: (id) => byId.get(id), unavailable: (id) => reasons.get(id) };
}

/** `nodes.list` semantics: case-insensitive match on id, title and description; exact category. */
export function searchNodes(catalog: NodeCatalog, query: NodeQuery): NodeSpec[] {
  const needle = query.q?.trim().toLowerCase();
  const matches = catalog.list().filter((spec) => {
    if (query.category !== undefined && spec.category !== query.category) return false;
    if (!needle) return true;
    return [spec.id, spec.title, spec.description].some((field) => field.toLowerCase().includes(needle));
  });
  return query.limit === undefined ? matches : matches.slice(0, query.limit);
}
