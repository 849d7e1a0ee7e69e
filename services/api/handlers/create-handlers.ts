import type { NodeCatalog } from '../../nodes';
import { catalogHandlers } from './catalog-handlers';
import type { Handlers } from './handler-types';
import { notImplemented } from './not-implemented';
import { runHandlers, type RunHandlerDeps } from './run-handlers';
import { workflowHandlers, type WorkflowHandlerDeps } from './workflow-handlers';

export interface HandlerDeps {
  catalog: NodeCatalog;
  /** Run execution; an API built without it (catalog-only tests) answers 501 to runs. */
  runs?: RunHandlerDeps;
  /** Published workflows; an API built without them answers 501 to `workflows.get`. */
  workflows?: WorkflowHandlerDeps;
}

/**
 * The handler of every operation. An API built without the parts an operation needs answers it
 * with a JSON 501.
 */
export function createHandlers(deps: HandlerDeps): Handlers {
  return {
    ...catalogHandlers(deps.catalog),
    ...(deps.workflows ? workflowHandlers(deps.workflows) : { 'workflows.get': notImplemented('workflows.get') }),
    ...(deps.runs ? runHandlers(deps.runs) : { 'runs.create': notImplemented('runs.create'), 'runs.node': notImplemented('runs.node') }),
  };
}
