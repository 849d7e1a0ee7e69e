import type { NodeCatalog } from '../../nodes';
import { unavailableNodeMessage } from '../../engine';
import { searchNodes } from '../../nodes';
import { AppError } from '../../platform/app-error';
import type { Handler } from './handler-types';

/** `nodes.list` and `nodes.get` over the node catalog. */
export function catalogHandlers(catalog: NodeCatalog): { 'nodes.list': Handler<'nodes.list'>; 'nodes.get': Handler<'nodes.get'> } {
  return {
    'nodes.list': async (input) => searchNodes(catalog, input),
    'nodes.get': async ({ id }) => {
      const spec = catalog.get(id);
      const remedy = spec ? undefined : catalog.unavailable(id);
      if (remedy !== undefined) throw new AppError({ code: 'not_found', message: unavailableNodeMessage(id, remedy) });
      if (!spec) throw new AppError({ code: 'not_found', message: `no node with id "${id}"; list nodes with GET /v1/nodes?q=<text>` });
      return spec;
    },
  };
}
