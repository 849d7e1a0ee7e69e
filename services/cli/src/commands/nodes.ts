import { searchNodes, type NodeSearch } from '../../../sdk/src/index';
import { connect, type ConnectionOptions } from '../connection';
import { interruptSignal } from '../interrupt';
import { nodeDetail, nodesTable, print, printJson } from '../output';

export interface NodesOptions extends ConnectionOptions {
  category?: string;
  limit?: number;
}

/** `svc nodes [query]`: the palette (works without a token), as a table or, with `--json`, the NodeSpec array; a query that is a node's id shows that node. */
export async function nodes(query: string | undefined, options: NodesOptions): Promise<void> {
  const { client } = connect(options);
  const search: NodeSearch = {};
  if (query) search.q = query;
  if (options.category) search.category = options.category;
  if (options.limit !== undefined) search.limit = options.limit;
  const found = await searchNodes(client, search, { signal: interruptSignal() });
  if (options.json) printJson(found);
  else {
    // A query that is a node's id shows that node whole (ports, constraints, example), as `nodes.get` has it.
    const exact = query === undefined ? undefined : found.find((spec) => spec.id === query);
    print(exact ? nodeDetail(exact) : nodesTable(found));
  }
}
