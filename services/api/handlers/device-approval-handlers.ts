import type { Scope } from '../../contract';
import { AppError } from '../../platform/app-error';
import { formatUserCode, hashUserCode, normalizeUserCode } from '../../platform/device-code';
import type { DeviceAuthorization, DecisionRefusal } from '../../store';
import type { DeviceRouteDeps } from './device-ports';
import { authOf, type CallContext, type Handler } from './handler-types';

export type DeviceApprovalDeps = Pick<DeviceRouteDeps, 'authorizations' | 'organizations' | 'memberships' | 'limiter' | 'userCodeFailures' | 'clock'>;

/** The normalized form of a typed code; a code that cannot be one of ours is 400, not a guess. */
function normalized(typed: string): string {
  const code = normalizeUserCode(typed);
  if (code === null) {
    throw new AppError({
      code: 'validation_failed',
      message: 'user_code must be the 8 letters shown by the CLI, e.g. BCDF-GHJK (only the consonants B C D F G H J K L M N P Q R S T V W X Z occur)',
    });
  }
  return code;
}

const REFUSALS: Record<DecisionRefusal, (code: string, a: DeviceAuthorization | null) => AppError> = {
  unknown: (code) => new AppError({ code: 'not_found', message: `no login request has the code ${code}; check the code the CLI shows, or run svc login again` }),
  expired: (code, a) => new AppError({ code: 'gone', message: `the code ${code} expired${a ? ` at ${a.expiresAt.toISOString()}` : ''}; run svc login again for a new one` }),
  decided: (code, a) => new AppError({ code: 'conflict', message: `the code ${code} was already ${a?.status === 'denied' ? 'denied' : 'approved'}; a code can be decided once` }),
};

function viewOf(code: string, a: DeviceAuthorization) {
  return { user_code: formatUserCode(code), client_id: a.clientId, scopes: a.scopes, expires_at: a.expiresAt.toISOString() };
}

/** The caller; these routes are `auth: 'required'`, so `invoke` guarantees one. */

/**
 * The approving person's side of the device flow (the web editor's `/device` page calls it):
 * look up a user code, approve it for one of their organizations, or deny it. Failed attempts
 * (unknown, expired or already decided codes) are limited per user and per client address.
 */
export function deviceApprovalHandlers(deps: DeviceApprovalDeps): { 'device.lookup': Handler<'device.lookup'>; 'device.approve': Handler<'device.approve'>; 'device.deny': Handler<'device.deny'> } {
  const clock = deps.clock ?? (() => new Date());
  const { perUser, perIp, windowMs } = deps.userCodeFailures;
  const userRule = { name: 'device-user-code-user', limit: perUser, windowMs };
  const ipRule = { name: 'device-user-code-ip', limit: perIp, windowMs };
  const keysOf = (ctx: CallContext) => [
    { rule: userRule, key: `user:${authOf(ctx).userId}`, whose: 'your account' },
    { rule: ipRule, key: `ip:${ctx.clientAddress ?? 'unknown'}`, whose: 'this address' },
  ];

  /** Refuses, before anything is looked up, a caller who has used up its failed attempts. */
  const guard = async (ctx: CallContext): Promise<void> => {
    for (const { rule, key, whose } of keysOf(ctx)) {
      // cost 0: reads the window's count without adding to it (only failures count)
      const state = await deps.limiter.hit(rule, key, 0);
      if (state.remaining > 0) continue;
      const seconds = Math.max(1, Math.ceil(state.resetMs / 1000));
      throw new AppError({
        code: 'rate_limited',
        message: `too many wrong or stale login codes from ${whose} (${rule.limit} per ${Math.round(rule.windowMs / 60000)} minutes); try again in ${seconds} s`,
        details: { retryAfterSeconds: seconds },
      });
    }
  };
  const failed = async (ctx: CallContext, error: AppError): Promise<never> => {
    await Promise.all(keysOf(ctx).map(({ rule, key }) => deps.limiter.hit(rule, key)));
    throw error;
  };

  return {
    'device.lookup': async ({ user_code }, ctx) => {
      await guard(ctx);
      const code = normalized(user_code);
      const a = await deps.authorizations.findByUserCodeHash(hashUserCode(code));
      if (!a) return failed(ctx, REFUSALS.unknown(formatUserCode(code), null));
      if (a.status !== 'pending') return failed(ctx, REFUSALS.decided(formatUserCode(code), a));
      if (a.expiresAt.getTime() <= clock().getTime()) return failed(ctx, REFUSALS.expired(formatUserCode(code), a));
      return viewOf(code, a);
    },

    'device.approve': async (body, ctx) => {
      await guard(ctx);
      const code = normalized(body.user_code);
      const auth = authOf(ctx);
      const org = body.org === undefined ? await deps.organizations.findById(auth.orgId) : await deps.organizations.findBySlug(body.org);
      const membership = org ? await deps.memberships.find(org.id, auth.userId) : null;
      if (!org || !membership) {
        throw new AppError({ code: 'not_found', message: body.org === undefined ? 'you are no longer a member of the organization of your sign-in; name one with "org"' : `you are not a member of an organization "${body.org}"` });
      }
      const pending = await deps.authorizations.findByUserCodeHash(hashUserCode(code));
      // The session may not do more than the approver's own credential may.
      const beyond = (pending?.scopes ?? []).filter((s) => !auth.scopes.includes(s as Scope));
      if (pending && pending.status === 'pending' && beyond.length > 0) {
        throw new AppError({ code: 'insufficient_scope', message: `the login request asks for ${beyond.map((s) => `"${s}"`).join(', ')}, which your own credential lacks; sign in with one that has it` });
      }
      const result = await deps.authorizations.decide(hashUserCode(code), { status: 'approved', userId: auth.userId, orgId: org.id, now: clock() });
      if (!result.ok) return failed(ctx, REFUSALS[result.reason](formatUserCode(code), result.authorization));
      return { status: 'approved' as const, ...viewOf(code, result.authorization), organization: { id: org.id, slug: org.slug, name: org.name } };
    },

    'device.deny': async (body, ctx) => {
      await guard(ctx);
      const code = normalized(body.user_code);
      const result = await deps.authorizations.decide(hashUserCode(code), { status: 'denied', userId: authOf(ctx).userId, now: clock() });
      if (!result.ok) return failed(ctx, REFUSALS[result.reason](formatUserCode(code), result.authorization));
      return { status: 'denied' as const, ...viewOf(code, result.authorization) };
    },
  };
}
