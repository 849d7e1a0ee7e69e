import type { NextFunction, Request, Response } from 'express';
import type { Operation, Scope } from '../../contract';
import { parseToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup, TokenRecord } from './auth-context';
import { authenticateByCookie } from './authenticate-cookie';
import { readSessionCookie } from './session-cookie';
import { passCallerGate } from './caller-gate';

const SHAPE_PROBLEMS = {
  unknown_prefix: 'it does not start with a known token prefix (svc_ or svcs_)',
  bad_length: 'it has the wrong length (was it cut off when copied?)',
  bad_checksum: 'its checksum does not match (was it mistyped?)',
} as const;

function unauthorized(message: string): AppError {
  return new AppError({ code: 'unauthorized', message });
}

function isScope(value: string): value is Scope {
  return value === 'read' || value === 'run';
}

/** Checks a bearer token and returns who it acts for; every failure names its reason. */
export async function authenticateBearer(header: string, tokens: TokenLookup, now: Date): Promise<AuthContext> {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!match) throw unauthorized('the Authorization header must have the form "Bearer <access token>"');
  const parsed = parseToken(match[1]!);
  if (!parsed.ok) throw unauthorized(`the access token is malformed: ${SHAPE_PROBLEMS[parsed.problem]}`);
  // A browser session travels only as the editor's HttpOnly cookie, where CSRF checks guard it.
  if (parsed.kind === 'browser') throw unauthorized('a browser session cannot be used as a bearer token; create an access token in the web editor under Settings, API tokens');
  const record: TokenRecord | null = await tokens.findByHash(parsed.hash);
  if (!record) throw unauthorized(`the access token ${parsed.displayPrefix}… is not known; create a new one in the web editor under Settings, API tokens`);
  if (record.revokedAt) throw unauthorized(`the access token ${parsed.displayPrefix}… was revoked at ${record.revokedAt.toISOString()}`);
  if (record.expiresAt && record.expiresAt.getTime() <= now.getTime()) {
    throw unauthorized(`the access token ${parsed.displayPrefix}… expired at ${record.expiresAt.toISOString()}`);
  }
  return { tokenId: record.id, userId: record.userId, orgId: record.orgId, scopes: record.scopes.filter(isScope), kind: record.kind };
}

/** What one authentication middleware demands. */
interface Requirement {
  /** Named in messages: the operation (`runs.create`) or route (`GET /v1/runs/:id`). */
  what: string;
  /** The scope the caller needs; null: any authenticated caller (account routes such as `GET /v1/me`). */
  scope: Scope | null;
  /** Token kinds allowed (default all): minting tokens, for one, is not for personal access tokens. */
  kinds?: readonly AuthContext['kind'][];
  /** true: a call without a usable token goes through with `res.locals.auth = null` (the node catalog). */
  optional: boolean;
}

const KIND_NAMES: Record<AuthContext['kind'], string> = {
  personal: 'personal access token',
  session: 'device-login session token (svc login)',
  browser: 'web editor session',
};

function authenticateWith(requirement: Requirement, tokens: TokenLookup, clock: () => Date) {
  const { what, scope, optional } = requirement;
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const header = req.get('authorization');
    // A bearer token wins over the cookie; the cookie (the web editor's session) is read only
    // without one, and cookie-authenticated changes must come from the service's own origin.
    const cookie = header ? null : readSessionCookie(req);
    if (!header && cookie === null) {
      if (optional) {
        res.locals.auth = null;
        return next();
      }
      res.set('WWW-Authenticate', 'Bearer');
      throw unauthorized(`${what} needs an access token: send the header "Authorization: Bearer <token>"`);
    }
    let auth: AuthContext;
    if (cookie !== null) {
      try {
        auth = await authenticateByCookie(cookie, req, res, tokens, clock());
      } catch (err) {
        // The node catalog works signed out: there a stale cookie is dropped (and cleared), not refused.
        if (!(optional && err instanceof AppError && err.code === 'unauthorized')) throw err;
        res.locals.auth = null;
        return next();
      }
      res.locals.authVia = 'cookie';
    } else {
      try {
        auth = await authenticateBearer(header!, tokens, clock());
      } catch (err) {
        // SPEC Errors: 401 applies to "all except the node catalog". There an unusable token
        // (garbage, unknown, expired, revoked) is ignored and the call is served as anonymous.
        if (optional && err instanceof AppError && err.code === 'unauthorized') {
          res.locals.auth = null;
          return next();
        }
        res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
        throw err;
      }
      res.locals.authVia = 'bearer';
    }
    // The per-token rate limit, when the app installed one: every request of a valid token
    // counts (refused ones included), and one over the budget is 429 before anything else.
    await passCallerGate(auth, res);
    if (requirement.kinds && !requirement.kinds.includes(auth.kind)) {
      throw new AppError({ code: 'forbidden', message: `${what} cannot be called with a ${KIND_NAMES[auth.kind]}; use ${requirement.kinds.map((k) => `a ${KIND_NAMES[k]}`).join(' or ')}` });
    }
    if (!optional && scope !== null && !auth.scopes.includes(scope)) {
      throw new AppError({
        code: 'insufficient_scope',
        message: `this token lacks the "${scope}" scope that ${what} needs; it has: ${auth.scopes.join(', ') || 'no scopes'}. Create a token with the "${scope}" scope`,
      });
    }
    res.locals.auth = auth;
    tokens.noteUsed?.(auth.tokenId);
    next();
  };
}

/**
 * Express middleware for one operation: sets `res.locals.auth`. Operations with `auth: 'optional'`
 * (the node catalog) work without a token, and there an unusable token is ignored (served as anonymous).
 */
export function authenticateFor(op: Operation, tokens: TokenLookup, clock: () => Date = () => new Date()) {
  return authenticateWith({ what: op.name, scope: op.scope, optional: op.auth === 'optional' }, tokens, clock);
}

/**
 * The same for a route beside the contract (run history, replay): a valid token with `scope`
 * is required; `what` names the route in messages. Sets `res.locals.auth`.
 */
export function authenticateScope(scope: Scope, what: string, tokens: TokenLookup, clock: () => Date = () => new Date()) {
  return authenticateWith({ what, scope, optional: false }, tokens, clock);
}

/**
 * For account routes (`GET /v1/me`, token management, device approval): any valid caller, of the
 * given token kinds when `kinds` is set. Sets `res.locals.auth`.
 */
export function authenticateAccount(what: string, tokens: TokenLookup, options: { kinds?: readonly AuthContext['kind'][]; clock?: () => Date } = {}) {
  return authenticateWith({ what, scope: null, optional: false, kinds: options.kinds }, tokens, options.clock ?? (() => new Date()));
}
