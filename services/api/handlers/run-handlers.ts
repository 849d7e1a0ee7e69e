import { AppError } from '../../platform/app-error';
import type { RunCaller, RunLauncher } from '../../runs';
import type { EditorWorkflowStore, MemberRoles } from './editor-ports';
import type { CallContext, Handler } from './handler-types';

/** What `editor.workflows.run` reads: the caller's membership and the workflow's saved draft. */
export interface DraftRunDeps {
  workflows: Pick<EditorWorkflowStore, 'findForOrg'>;
  memberships: MemberRoles;
}

/** The caller of a run operation: the contract marks both `auth: 'required'`, so `invoke` guarantees one. */
function callerOf(ctx: CallContext): RunCaller {
  if (!ctx.auth) throw new AppError({ code: 'unauthorized', message: 'this operation needs an access token' });
  const maxDurationSeconds = ctx.options?.maxDurationSeconds;
  return { orgId: ctx.auth.orgId, userId: ctx.auth.userId, tokenId: ctx.auth.tokenId, signal: ctx.signal, log: ctx.log, ...(maxDurationSeconds === undefined ? {} : { maxDurationSeconds }) };
}

type RunName = 'runs.create' | 'runs.node' | 'editor.workflows.run';

/**
 * `runs.create` (a stream of events), `runs.node` (one node, one JSON answer) and
 * `editor.workflows.run` (the workflow's saved draft run inline, recorded under the workflow).
 */
export function runHandlers(launcher: RunLauncher, drafts: DraftRunDeps): { [K in RunName]: Handler<K> } {
  return {
    'runs.create': async (input, ctx) => (await launcher.create(input, callerOf(ctx))).events,
    'runs.node': (input, ctx) => launcher.runNode(input, callerOf(ctx)),
    'editor.workflows.run': async ({ id, inputs, maxCostUsd }, ctx) => {
      const caller = callerOf(ctx);
      if (!(await drafts.memberships.find(caller.orgId, caller.userId))) {
        throw new AppError({ code: 'forbidden', message: "POST /editor/workflows/:id/runs: you are no longer a member of this token's organization" });
      }
      const workflow = await drafts.workflows.findForOrg(id, caller.orgId);
      if (!workflow) throw new AppError({ code: 'not_found', message: `no workflow with id "${id}" in your organization; list them with GET /editor/workflows` });
      if (workflow.draft === null) {
        throw new AppError({ code: 'conflict', message: `workflow "${id}" has no draft to run; save one with PATCH /editor/workflows/${id}` });
      }
      const input = { workflow: workflow.draft, ...(inputs ? { inputs } : {}), ...(maxCostUsd !== undefined ? { maxCostUsd } : {}) };
      return (await launcher.create(input, caller, { workflowId: workflow.id })).events;
    },
  };
}
