import type { NextFunction, Request, Response } from 'express';
import type { Scope, TokenKind } from '../../contract';
import { parseToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup, TokenRecord } from './auth-context';
import { authenticateByCookie } from './authenticate-cookie';
import { readSessionCookie } from './session-cookie';
import { admitCaller } from './admit-caller';
import type { TokenLimit } from './call-limits';

const SHAPE_PROBLEMS = {
  unknown_prefix: 'it does not start with a known token prefix (svc_, svcs_ or svco_)',
  bad_length: 'it has the wrong length (was it cut off when copied?)',
  bad_checksum: 'its checksum does not match (was it mistyped?)',
} as const;

/** `Authorization: Bearer <token>`: the token. */
const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

function unauthorized(message: string): AppError {
  return new AppError({ code: 'unauthorized', message });
}

function isScope(value: string): value is Scope {
  return value === 'read' || value === 'run';
}

/** Checks a bearer token and returns who it acts for; every failure names its reason. */
export async function authenticateBearer(header: string, tokens: TokenLookup, now: Date): Promise<AuthContext> {
  const match = BEARER.exec(header);
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

/**
 * The id of the token `authenticateBearer` would accept for this header, when the lookup's cache
 * already holds its record (no database read, no await); undefined otherwise, and for anything
 * it would refuse. The per-IP limit uses it to count the token's call beside its own.
 */
export function knownBearerToken(header: string | undefined, tokens: TokenLookup, now: Date): string | undefined {
  if (!header || !tokens.peek) return undefined;
  const match = BEARER.exec(header);
  const parsed = match ? parseToken(match[1]!) : undefined;
  if (!parsed?.ok || parsed.kind === 'browser') return undefined;
  const record = tokens.peek(parsed.hash);
  if (!record || record.revokedAt || (record.expiresAt && record.expiresAt.getTime() <= now.getTime())) return undefined;
  return record.id;
}

/** How to identify the caller of one operation or route. */
export interface Identification {
  /** Named in messages. */
  what: string;
  /** true: a call without a usable token is served as anonymous (the node catalog). */
  optional: boolean;
  tokens: TokenLookup;
  clock?: () => Date;
}

/**
 * Who is calling, from the bearer token or, without one, the web editor's session cookie (whose
 * changes must come from the service's own origin: the CSRF guard runs first). Null only when
 * `optional` and no usable credential came: there an unusable token is ignored, not refused
 * (SPEC Errors: 401 applies to all but the node catalog). Scope, kind and limits are the call
 * path's (`invoke`) to check.
 */
export async function identifyCaller(req: Request, res: Response, how: Identification): Promise<AuthContext | null> {
  const { what, optional, tokens } = how;
  const now = (how.clock ?? (() => new Date()))();
  const header = req.get('authorization');
  const cookie = header ? null : readSessionCookie(req);
  if (!header && cookie === null) {
    if (optional) return null;
    res.set('WWW-Authenticate', 'Bearer');
    throw unauthorized(`${what} needs an access token: send the header "Authorization: Bearer <token>"`);
  }
  let auth: AuthContext;
  try {
    auth = cookie !== null ? await authenticateByCookie(cookie, req, res, tokens, now) : await authenticateBearer(header!, tokens, now);
  } catch (err) {
    if (optional && err instanceof AppError && err.code === 'unauthorized') return null;
    if (cookie === null) res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
    throw err;
  }
  res.locals.authVia = cookie !== null ? 'cookie' : 'bearer';
  tokens.noteUsed?.(auth.tokenId);
  return auth;
}

/**
 * Middleware for the few routes outside the contract registries that need a caller (`GET
 * /auth/session`): identifies, counts the token's limit, admits. Sets `res.locals.auth`.
 */
export function authenticateAccount(what: string, tokens: TokenLookup, options: { kinds?: readonly TokenKind[]; clock?: () => Date; limit?: TokenLimit } = {}) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const auth = (await identifyCaller(req, res, { what, optional: false, tokens, clock: options.clock }))!;
    await options.limit?.count(auth);
    admitCaller({ what, scope: null, kinds: options.kinds, optional: false }, auth);
    res.locals.auth = auth;
    next();
  };
}
