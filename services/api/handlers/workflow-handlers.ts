import type { PublishedWorkflow } from '../../contract';
import { formatSemver, parseSelector, parseWorkflowRef, type PublishedVersion, type WorkflowRef } from '../../engine';
import { AppError } from '../../platform/app-error';
import type { Handler } from './handler-types';

/** Port: finds the published version a reference names (`WorkflowRepository` satisfies it). */
export interface PublishedWorkflowReader {
  /** A deleted workflow is found by no reference (docs/workflows.md). */
  findPublished(ref: WorkflowRef): Promise<PublishedVersion | null>;
}

export interface WorkflowHandlerDeps {
  published: PublishedWorkflowReader;
}

/** A published version as `workflows.get` (and the editor's publish) answers it. */
export function publishedBody(found: PublishedVersion): PublishedWorkflow {
  return { id: found.workflowId, address: found.address, version: formatSemver(found.version), sequence: found.sequence, workflow: found.definition };
}

const USAGE = 'write <org-slug>/<workflow-slug> (the "/" encoded as %2F in the path) or the workflow UUID, optionally with @<version>';

/**
 * The reference `workflows.get` was asked for: the path's id with its optional `@<selector>`, or
 * the selector of `?version=`; both at once is a 400 (SPEC Errors).
 */
export function requestedRef(id: string, version: string | undefined): WorkflowRef {
  const parsed = parseWorkflowRef(id);
  if (!parsed.ok) throw new AppError({ code: 'bad_request', message: `${parsed.message}; ${USAGE}` });
  if (version === undefined) return parsed.value;
  if (parsed.value.explicitSelector) {
    throw new AppError({ code: 'bad_request', message: `the version is given twice ("@" on the id and ?version=${version}); give it one way only` });
  }
  const selector = parseSelector(version);
  if (!selector.ok) throw new AppError({ code: 'bad_request', message: selector.message });
  return { id: parsed.value.id, selector: selector.value, explicitSelector: true };
}

/**
 * `workflows.get`: a published version by address or UUID and selector, for any caller with the
 * `read` scope (publishing is sharing; docs/workflows.md). A deleted workflow answers 404 by its
 * address and by its UUID alike, as `runs.create` does: deletion withdraws it everywhere.
 */
export function workflowHandlers(deps: WorkflowHandlerDeps): { 'workflows.get': Handler<'workflows.get'> } {
  return {
    'workflows.get': async (input): Promise<PublishedWorkflow> => {
      const ref = requestedRef(input.id, input.version);
      const found = await deps.published.findPublished(ref);
      if (!found) {
        throw new AppError({
          code: 'not_found',
          message: `no published workflow version matches "${input.id}"${input.version === undefined ? '' : ` at version "${input.version}"`}; check the address and the version`,
        });
      }
      return publishedBody(found);
    },
  };
}
