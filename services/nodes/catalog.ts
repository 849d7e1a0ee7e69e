import type { NodeSpec } from '../contract';

/** The node palette: every platform node's published interface. */
export interface NodeCatalog {
  list(): readonly NodeSpec[];
  get(id: string): NodeSpec | undefined;
}

export interface NodeQuery {
  q?: string;
  category?: string;
  limit?: number;
}

/** A catalog over a fixed list of specs, in the order given. */
export function createCatalog(specs: readonly NodeSpec[]): NodeCatalog {
  const byId = new Map(specs.map((spec) => [spec.id, spec]));
  if (byId.size !== specs.length) throw new Error('node catalog has duplicate node ids');
  return { list: () => specs, get: (id) => byId.get(id) };
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
