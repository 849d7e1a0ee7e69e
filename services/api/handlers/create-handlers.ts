import type { NodeCatalog } from '../../nodes';
import { catalogHandlers } from './catalog-handlers';
import type { Handlers } from './handler-types';
import { notImplemented } from './not-implemented';

export interface HandlerDeps {
  catalog: NodeCatalog;
}

/**
 * The handler of every operation. Operations whose implementation has not landed answer 501
 * with a JSON error (workflow publishing and run execution arrive with their issues).
 */
export function createHandlers(deps: HandlerDeps): Handlers {
  return {
    ...catalogHandlers(deps.catalog),
    'workflows.get': notImplemented('workflows.get'),
    'runs.create': notImplemented('runs.create'),
    'runs.node': notImplemented('runs.node'),
  };
}
