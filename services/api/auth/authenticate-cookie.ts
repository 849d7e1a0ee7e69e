import type { Request, Response } from 'express';
import { parseToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from './auth-context';
import { crossOriginProblem } from './csrf';
import { clearedSessionCookie, readSessionCookie, sitePolicyFor } from './session-cookie';

function unauthorized(message: string): AppError {
  return new AppError({ code: 'unauthorized', message });
}

function isScope(value: string): value is 'read' | 'run' {
  return value === 'read' || value === 'run';
}

/** Checks the value of a session cookie (a `svcb_` browser session) and returns who it acts for. */
export async function authenticateSessionCookie(value: string, tokens: TokenLookup, now: Date): Promise<AuthContext> {
  const parsed = parseToken(value);
  if (!parsed.ok || parsed.kind !== 'browser') throw unauthorized('the session cookie does not hold a web editor session; sign in again');
  const record = await tokens.findByHash(parsed.hash);
  if (!record || record.kind !== 'browser') throw unauthorized('your web editor session is not known; sign in again');
  if (record.revokedAt) throw unauthorized(`your web editor session was signed out at ${record.revokedAt.toISOString()}; sign in again`);
  if (record.expiresAt && record.expiresAt.getTime() <= now.getTime()) {
    throw unauthorized(`your web editor session expired at ${record.expiresAt.toISOString()}; sign in again`);
  }
  return { tokenId: record.id, userId: record.userId, orgId: record.orgId, scopes: record.scopes.filter(isScope), kind: 'browser' };
}

/** Refuses a cookie-authenticated request that may have been forged by another site (see csrf.ts). */
export function assertSameOrigin(req: Request): void {
  const problem = crossOriginProblem(req.method, req.headers, sitePolicyFor(req)?.origin ?? null);
  if (problem) throw new AppError({ code: 'forbidden', message: problem });
}

/**
 * Authenticates a request by its session cookie: the CSRF guard first (a forged request is
 * refused before anything is looked up), then the session. A session that is unknown, signed out
 * or expired is 401 and the response removes the cookie.
 */
export async function authenticateByCookie(value: string, req: Request, res: Response, tokens: TokenLookup, now: Date): Promise<AuthContext> {
  assertSameOrigin(req);
  try {
    return await authenticateSessionCookie(value, tokens, now);
  } catch (err) {
    if (err instanceof AppError && err.code === 'unauthorized') res.append('Set-Cookie', clearedSessionCookie({ secure: sitePolicyFor(req)?.secure ?? false }));
    throw err;
  }
}

/**
 * The person a server-rendered page serves: the cookie's caller, or null with why when there is
 * none (no cookie: no reason; an expired or revoked session: its message, and the cookie cleared)
 * so the page can show its sign-in form instead of an error.
 */
export async function pageCaller(req: Request, res: Response, tokens: TokenLookup, now: Date): Promise<{ auth: AuthContext | null; why: string | null }> {
  const value = readSessionCookie(req);
  if (value === null) return { auth: null, why: null };
  try {
    const auth = await authenticateByCookie(value, req, res, tokens, now);
    tokens.noteUsed?.(auth.tokenId);
    return { auth, why: null };
  } catch (err) {
    if (err instanceof AppError && err.code === 'unauthorized') return { auth: null, why: err.message };
    throw err;
  }
}
