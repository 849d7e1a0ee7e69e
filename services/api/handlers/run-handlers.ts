import { AppError } from '../../platform/app-error';
import type { RunCaller, RunLauncher } from '../../runs';
import type { CallContext, Handler } from './handler-types';

/** The caller of a run operation: the contract marks both `auth: 'required'`, so `invoke` guarantees one. */
function callerOf(ctx: CallContext): RunCaller {
  if (!ctx.auth) throw new AppError({ code: 'unauthorized', message: 'this operation needs an access token' });
  return { orgId: ctx.auth.orgId, userId: ctx.auth.userId, tokenId: ctx.auth.tokenId, signal: ctx.signal, log: ctx.log };
}

/** `runs.create` (a stream of events) and `runs.node` (one node, one JSON answer). */
export function runHandlers(launcher: RunLauncher): { 'runs.create': Handler<'runs.create'>; 'runs.node': Handler<'runs.node'> } {
  return {
    'runs.create': async (input, ctx) => (await launcher.create(input, callerOf(ctx))).events,
    'runs.node': (input, ctx) => launcher.runNode(input, callerOf(ctx)),
  };
}
