import { DEFAULT_WEBHOOK_EVENTS } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { CostSources, RunCaller, RunLauncher } from '../../runs';
import type { EditorWorkflowStore, MemberRoles } from './editor-ports';
import { assertWebhookUrl, type CallContext, type Handler } from './handler-types';
import { requestFingerprint } from './request-fingerprint';

/** What `editor.workflows.run` reads: the caller's membership and the workflow's saved draft. */
export interface DraftRunDeps {
  workflows: Pick<EditorWorkflowStore, 'findForOrg'>;
  memberships: MemberRoles;
}


type RunName = 'runs.create' | 'runs.node' | 'editor.workflows.run';
type RunHandlerName = RunName | 'runs.estimate';

/**
 * The caller of a run operation (the contract marks them `auth: 'required'`, so `invoke`
 * guarantees one), with its call options: the deadline, and the idempotency key with the
 * fingerprint of the request it came with.
 */
function callerWithOptions(ctx: CallContext, call: RunName, input: unknown, webhookUrlProblem: (url: string) => string | null): RunCaller {
  if (!ctx.auth) throw new AppError({ code: 'unauthorized', message: 'this operation needs an access token' });
  const { maxDurationSeconds, idempotencyKey, webhookUrl, webhookEvents, outputCache } = ctx.options ?? {};
  if (webhookEvents !== undefined && webhookUrl === undefined) {
    throw new AppError({ code: 'validation_failed', message: 'the Webhook-Events header needs a Webhook-Url header: where to send those events' });
  }
  assertWebhookUrl(webhookUrl, webhookUrlProblem);
  return {
    orgId: ctx.auth.orgId,
    userId: ctx.auth.userId,
    tokenId: ctx.auth.tokenId,
    signal: ctx.signal,
    log: ctx.log,
    ...(maxDurationSeconds === undefined ? {} : { maxDurationSeconds }),
    ...(outputCache === undefined ? {} : { outputCache }),
    ...(idempotencyKey === undefined ? {} : { idempotency: { key: idempotencyKey, requestHash: requestFingerprint(call, input, ctx.options) } }),
    ...(webhookUrl === undefined ? {} : { webhook: { url: webhookUrl, events: webhookEvents ?? DEFAULT_WEBHOOK_EVENTS } }),
  };
}

/**
 * `runs.create` (a stream of events), `runs.node` (one node, one JSON answer) and
 * `editor.workflows.run` (the workflow's saved draft run inline, recorded under the workflow).
 */
export function runHandlers(launcher: RunLauncher, drafts: DraftRunDeps, costs: CostSources, webhookUrlProblem: (url: string) => string | null): { [K in RunHandlerName]: Handler<K> } {
  const callerOf = (ctx: CallContext, call: RunName, input: unknown): RunCaller => callerWithOptions(ctx, call, input, webhookUrlProblem);
  return {
    'runs.create': async (input, ctx) => (await launcher.create(input, callerOf(ctx, 'runs.create', input))).events,
    'runs.node': (input, ctx) => launcher.runNode(input, callerOf(ctx, 'runs.node', input)),
    // The contract marks it `auth: 'required'`: invoke guarantees a caller.
    'runs.estimate': (input, ctx) => launcher.estimate(input, ctx.auth!.orgId, costs),
    'editor.workflows.run': async (request, ctx) => {
      const { id, inputs, maxCostUsd } = request;
      const caller = callerOf(ctx, 'editor.workflows.run', request);
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
