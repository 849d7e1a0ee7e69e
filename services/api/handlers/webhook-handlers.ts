import { AppError } from '../../platform/app-error';
import type { MemberRoles } from './editor-ports';
import { authOf, type Handler } from './handler-types';

export interface WebhookHandlerDeps {
  /** `WebhookRepository`. */
  secrets: { secret(orgId: string): Promise<string>; rotateSecret(orgId: string): Promise<string> };
  memberships: MemberRoles;
}


/**
 * The organization's webhook signing secret (docs/webhooks.md): any member with a `run` token
 * reads it (whoever sets a webhook must verify it); owners and admins replace it.
 */
export function webhookHandlers(deps: WebhookHandlerDeps): { 'webhooks.secret': Handler<'webhooks.secret'>; 'webhooks.rotate': Handler<'webhooks.rotate'> } {
  return {
    'webhooks.secret': async (_input, ctx) => ({ secret: await deps.secrets.secret(authOf(ctx).orgId) }),
    'webhooks.rotate': async (_input, ctx) => {
      const { orgId, userId } = authOf(ctx);
      const member = await deps.memberships.find(orgId, userId);
      if (!member || (member.role !== 'owner' && member.role !== 'admin')) {
        throw new AppError({ code: 'forbidden', message: "only an owner or an admin of the organization can replace its webhook secret; ask one, or read the current one with GET /v1/webhooks/secret" });
      }
      return { secret: await deps.secrets.rotateSecret(orgId) };
    },
  };
}
