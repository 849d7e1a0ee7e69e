import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { SessionBody } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { authenticateAccount } from '../auth/authenticate';
import { assertSameOrigin } from '../auth/authenticate-cookie';
import type { BrowserSessions, SessionMemberships, SessionTokens, SessionUsers } from '../auth/browser-sessions';
import { sessionBody } from '../auth/session-body';
import { readSessionCookie } from '../auth/session-cookie';
import type { TokenLimit } from '../auth/call-limits';

export interface SessionRouteDeps {
  /** Sign-in and sign-out (shared with the device-login page). */
  browserSessions: BrowserSessions;
  users: Pick<SessionUsers, 'findById'>;
  memberships: Pick<SessionMemberships, 'listOrganizationsOfUser'>;
  sessions: Pick<SessionTokens, 'findById'>;
  /** Authentication of `GET /auth/session` (the service's token lookup, which notes usage). */
  tokens: TokenLookup;
  /** The per-token request limit every authenticated call counts against; absent when 0. */
  tokenLimit: TokenLimit | undefined;
}

const SIGN_IN_BODY_LIMIT = 16 * 1024;

function route(path: string, methods: string[]) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.locals.route = path;
    res.locals.allowedMethods = methods;
    next();
  };
}

/**
 * `GET /auth/session?probe=1`: the studio's question on load, "is anyone signed in?", whose usual
 * answer for a new visitor is no. A 401 there would be an error in the browser's console on every
 * first visit, so a probe is answered `204` when nobody is signed in.
 */
function isProbe(req: Request): boolean {
  return req.query.probe === '1';
}

function signedOut(res: Response): void {
  res.set('Cache-Control', 'no-store');
  res.status(204).end();
}

/**
 * The web editor's cookie sessions (see docs/auth.md):
 *
 * - `POST /auth/sign-in` `{ email, password, org? }`: checks the password, stores a browser
 *   session (an `access_tokens` row of kind `browser`, scopes read and run, only its hash) and sets
 *   the `svc_session` cookie; answers `{ user, organization, organizations, expiresAt }`;
 * - `POST /auth/sign-out`: revokes the cookie's session and clears the cookie (idempotent);
 * - `POST /auth/switch` `{ org }`: moves the cookie's session to another of the user's
 *   organizations (a new session and cookie; the old one revoked); answers like sign-in;
 * - `GET /auth/session`: who the cookie signs in, or 401.
 *
 * Sign-in, sign-out and switch are refused from any origin but the service's own (a forged sign-in
 * would sign the victim into the attacker's account; a forged sign-out, out of theirs).
 */
export function createSessionRouter(deps: SessionRouteDeps): Router {
  const router = Router();
  const json = express.json({ limit: SIGN_IN_BODY_LIMIT, type: () => true, strict: true });
  // Before the body is read: a forged post is refused whatever it holds.
  const sameOriginOnly = (req: Request, _res: Response, next: NextFunction): void => {
    assertSameOrigin(req);
    next();
  };

  router.post('/auth/sign-in', route('/auth/sign-in', ['POST']), sameOriginOnly, json, async (req: Request, res: Response) => {
    const body: SessionBody = await deps.browserSessions.signIn(req, res, req.body);
    res.set('Cache-Control', 'no-store');
    res.status(200).json(body);
  });

  router.post('/auth/sign-out', route('/auth/sign-out', ['POST']), async (req: Request, res: Response) => {
    await deps.browserSessions.signOut(req, res);
    res.status(204).end();
  });

  router.post('/auth/switch', route('/auth/switch', ['POST']), sameOriginOnly, json, async (req: Request, res: Response) => {
    const body: SessionBody = await deps.browserSessions.switchOrganization(req, res, req.body);
    res.set('Cache-Control', 'no-store');
    res.status(200).json(body);
  });

  router.get('/auth/session', route('/auth/session', ['GET']), (req: Request, res: Response, next: NextFunction) => {
    if (readSessionCookie(req) === null && !req.get('authorization')) {
      if (isProbe(req)) return signedOut(res);
      throw new AppError({ code: 'unauthorized', message: 'not signed in: the request carries no session cookie; sign in with POST /auth/sign-in' });
    }
    next();
  }, authenticateAccount('GET /auth/session', deps.tokens, { kinds: ['browser'], limit: deps.tokenLimit }), async (_req: Request, res: Response) => {
    const auth = res.locals.auth as AuthContext;
    const [user, organizations, session] = await Promise.all([
      deps.users.findById(auth.userId),
      deps.memberships.listOrganizationsOfUser(auth.userId),
      deps.sessions.findById(auth.tokenId),
    ]);
    if (!user || !session?.expiresAt) throw new AppError({ code: 'unauthorized', message: 'your web editor session no longer matches an account; sign in again' });
    // A member removed from the session's organization has no session there any more.
    const body = sessionBody(user, organizations, auth.orgId, session.expiresAt);
    if (!body) throw new AppError({ code: 'unauthorized', message: "you are no longer a member of this session's organization; sign in again" });
    res.set('Cache-Control', 'no-store');
    res.status(200).json(body);
  }, (err: unknown, req: Request, res: Response, next: NextFunction) => {
    // A probe's dead cookie (expired, revoked) is "signed out" too; its clearing Set-Cookie stays.
    if (isProbe(req) && err instanceof AppError && err.code === 'unauthorized') return signedOut(res);
    next(err);
  });

  // Other methods on these paths: 405 with Allow (answered by methodNotAllowed).
  router.all('/auth/sign-in', route('/auth/sign-in', ['POST']));
  router.all('/auth/sign-out', route('/auth/sign-out', ['POST']));
  router.all('/auth/switch', route('/auth/switch', ['POST']));
  router.all('/auth/session', route('/auth/session', ['GET']));
  return router;
}
