import type { FairStatus, ProviderLimiter } from '../../queue';
import type { Handler } from './handler-types';

export interface QueueHandlerDeps {
  /** `StepQueue.orgStatus`: null without fair scheduling. */
  statusOf(orgId: string): Promise<FairStatus | null>;
  /** ORG_STEP_CONCURRENCY: the limit of an organization without its own (0: none). */
  defaultLimit: number;
  /** The organization's provider requests waiting under each provider limit. */
  providerWaitsOf: ProviderLimiter['waitingOf'];
}

/** `queue.get`: the caller's organization's steps waiting and dispatched, and its limit (docs/scheduling.md). */
export function queueHandlers(deps: QueueHandlerDeps): { 'queue.get': Handler<'queue.get'> } {
  return {
    'queue.get': async (_input, ctx) => {
      const [status, waits] = await Promise.all([deps.statusOf(ctx.auth!.orgId), deps.providerWaitsOf(ctx.auth!.orgId)]);
      const limit = status?.ownLimit ?? deps.defaultLimit;
      return {
        fairScheduling: status !== null,
        waitingSteps: status?.waiting ?? null,
        dispatchedSteps: status?.dispatched ?? null,
        limit: status === null || limit === 0 ? null : limit,
        limitIsOwn: (status?.ownLimit ?? null) !== null,
        organizationsWaiting: status?.organizationsWaiting ?? null,
        providerLimits: waits.map(({ key, waiting, blockedBy }) => ({ provider: key, waitingSteps: waiting, blockedBy })),
      };
    },
  };
}
