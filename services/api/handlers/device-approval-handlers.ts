import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { Type } from '@sinclair/typebox';
import { strictObject, validate, type Scope } from '../../contract';
import { AppError } from '../../platform/app-error';
import { formatUserCode, hashUserCode, normalizeUserCode } from '../../platform/device-code';
import type { DeviceAuthorization, DecisionRefusal } from '../../store';
import type { AuthContext } from '../auth/auth-context';
import { authenticateAccount } from '../auth/authenticate';
import type { DeviceRouteDeps } from './device-ports';
import { allowOnly, routeLabel } from './route-marks';

const UserCodeSchema = Type.String({ minLength: 1, maxLength: 32, description: 'The code shown by the CLI, e.g. BCDF-GHJK (case, dashes and spaces do not matter)' });
const LookupQuerySchema = strictObject({ user_code: UserCodeSchema });
const ApproveBodySchema = strictObject({
  user_code: UserCodeSchema,
  org: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Slug of the organization the session acts for; default the one of your sign-in' })),
});
const DenyBodySchema = strictObject({ user_code: UserCodeSchema });

/**
 * Who may see and decide codes: a person signed in to the web editor (the `/device` page), or a
 * device-login session (`svc`). Approving issues a credential, so, as for minting tokens
 * (docs/auth.md), a personal access token may not: a leaked one must not be able to mint others.
 */
const APPROVER_KINDS: readonly AuthContext['kind'][] = ['browser', 'session'];

function checked<T>(result: { ok: true; value: T } | { ok: false; message: string; issues: unknown }): T {
  if (!result.ok) throw new AppError({ code: 'validation_failed', message: result.message, details: { issues: result.issues } });
  return result.value;
}

function authOf(res: Response): AuthContext {
  return res.locals.auth as AuthContext;
}

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

/**
 * The approving person's side of the device flow (the web editor's `/device` page calls it):
 * look up a user code, approve it for one of their organizations, or deny it. Failed attempts
 * (unknown, expired or already decided codes) are limited per user and per client IP.
 */
export function deviceApprovalRouter(deps: DeviceRouteDeps): Router {
  const router = Router();
  const clock = deps.clock ?? (() => new Date());
  const json = express.json({ limit: '16kb', type: () => true, strict: true });
  const { perUser, perIp, windowMs } = deps.userCodeFailures;
  const userRule = { name: 'device-user-code-user', limit: perUser, windowMs };
  const ipRule = { name: 'device-user-code-ip', limit: perIp, windowMs };
  const keysOf = (req: Request, res: Response) => [
    { rule: userRule, key: `user:${authOf(res).userId}`, whose: 'your account' },
    { rule: ipRule, key: `ip:${req.ip ?? 'unknown'}`, whose: 'this address' },
  ];

  /** Refuses, before anything is looked up, a caller who has used up its failed attempts. */
  const guard = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    for (const { rule, key, whose } of keysOf(req, res)) {
      // cost 0: reads the window's count without adding to it (only failures count)
      const state = await deps.limiter.hit(rule, key, 0);
      if (state.remaining > 0) continue;
      const seconds = Math.max(1, Math.ceil(state.resetMs / 1000));
      res.set('Retry-After', String(seconds));
      throw new AppError({
        code: 'rate_limited',
        message: `too many wrong or stale login codes from ${whose} (${rule.limit} per ${Math.round(rule.windowMs / 60000)} minutes); try again in ${seconds} s`,
      });
    }
    next();
  };
  const failed = async (req: Request, res: Response, error: AppError): Promise<never> => {
    await Promise.all(keysOf(req, res).map(({ rule, key }) => deps.limiter.hit(rule, key)));
    throw error;
  };
  const authenticated = (what: string) => authenticateAccount(what, deps.tokens, { kinds: APPROVER_KINDS, clock: deps.clock });

  router.get('/oauth/device/lookup', routeLabel('/oauth/device/lookup'), authenticated('GET /oauth/device/lookup'), guard, async (req: Request, res: Response) => {
    const { user_code } = checked(validate(LookupQuerySchema, { ...(req.query as Record<string, unknown>) }));
    const code = normalized(user_code);
    const a = await deps.authorizations.findByUserCodeHash(hashUserCode(code));
    const now = clock();
    if (!a) return failed(req, res, REFUSALS.unknown(formatUserCode(code), null));
    if (a.status !== 'pending') return failed(req, res, REFUSALS.decided(formatUserCode(code), a));
    if (a.expiresAt.getTime() <= now.getTime()) return failed(req, res, REFUSALS.expired(formatUserCode(code), a));
    res.set('Cache-Control', 'no-store');
    res.status(200).json(viewOf(code, a));
  });

  router.post('/oauth/device/approve', routeLabel('/oauth/device/approve'), json, authenticated('POST /oauth/device/approve'), guard, async (req: Request, res: Response) => {
    const body = checked(validate(ApproveBodySchema, req.body ?? {}));
    const code = normalized(body.user_code);
    const auth = authOf(res);
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
    if (!result.ok) return failed(req, res, REFUSALS[result.reason](formatUserCode(code), result.authorization));
    res.status(200).json({ status: 'approved', ...viewOf(code, result.authorization), organization: { id: org.id, slug: org.slug, name: org.name } });
  });

  router.post('/oauth/device/deny', routeLabel('/oauth/device/deny'), json, authenticated('POST /oauth/device/deny'), guard, async (req: Request, res: Response) => {
    const body = checked(validate(DenyBodySchema, req.body ?? {}));
    const code = normalized(body.user_code);
    const result = await deps.authorizations.decide(hashUserCode(code), { status: 'denied', userId: authOf(res).userId, now: clock() });
    if (!result.ok) return failed(req, res, REFUSALS[result.reason](formatUserCode(code), result.authorization));
    res.status(200).json({ status: 'denied', ...viewOf(code, result.authorization) });
  });

  allowOnly(router, '/oauth/device/lookup', ['GET']);
  allowOnly(router, '/oauth/device/approve', ['POST']);
  allowOnly(router, '/oauth/device/deny', ['POST']);
  return router;
}
