import { randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { hashToken } from '../../platform/access-token';
import { AppError, toAppError } from '../../platform/app-error';
import type { OAuthRepository } from '../../store';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { assertSameOrigin, pageCaller } from '../auth/authenticate-cookie';
import type { BrowserSessions, SessionMemberships, SessionOrganizations, SessionUsers } from '../auth/browser-sessions';
import { fromRequestParsing } from '../http/request-parse-errors';
import type { OrganizationChoice } from '../pages/device-page-views';
import { authorizeSignInView, consentView, requestProblemView, type ConsentRequestView } from '../pages/mcp-authorize-views';
import { formField, formReader } from '../pages/form-posts';
import { sendPage, type Page } from '../pages/page-layout';
import { checkAuthorizationRequest, redirectWith, type AuthorizationRequest, type RequestCheck } from './mcp-authorization-request';
import { ISSUER_PATH } from './mcp-oauth-routes';
import { allowOnly } from './route-marks';

export interface McpAuthorizePageDeps {
  /** Authentication of the session cookie (the service's token lookup, which notes usage). */
  tokens: TokenLookup;
  /** Password sign-in and sign-out, as `POST /auth/sign-in` and `/auth/sign-out` do them. */
  browserSessions: BrowserSessions;
  users: Pick<SessionUsers, 'findById'>;
  memberships: SessionMemberships;
  organizations: Pick<SessionOrganizations, 'findById'>;
  oauth: Pick<OAuthRepository, 'findClient' | 'createCode' | 'deleteExpiredCodes'>;
  /** `$PUBLIC_BASE_URL/mcp`. */
  resource: string;
  codeTtlSeconds: number;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  log: Logger;
  clock?: () => Date;
}

const PATH = `${ISSUER_PATH}/authorize`;
/** Expired codes are kept this long (a late exchange is told "expired"), then deleted. */
const EXPIRED_RETENTION_MS = 24 * 3600 * 1000;
const FOOTER = 'Only allow applications you are connecting yourself.';
/** Refusals shown again on the form (a wrong password, a rate limit, an organization not one's own). */
const MENDABLE = new Set(['validation_failed', 'unauthorized', 'forbidden', 'rate_limited']);

const actionOf = (req: Request): string => `${req.baseUrl}${PATH}`;

function viewOf(request: AuthorizationRequest): ConsentRequestView {
  return { clientName: request.client.name, clientId: request.client.id, redirectUri: request.redirectUri, scopes: request.scopes, fields: request.fields };
}

/**
 * The authorization endpoint of the MCP authorization server (docs/auth.md, "OAuth for MCP
 * clients"): an HTML page like the device-login page (no script, the same sign-in, the same CSRF
 * rule for every post). It checks the authorization request on every GET and POST, signs the
 * person in, shows the consent screen (client, where the answer goes, scopes, organization), and
 * on Allow sends an authorization code to the redirect URI; on Deny, `error=access_denied`.
 */
export function createMcpAuthorizePageRouter(deps: McpAuthorizePageDeps): Router {
  const router = Router();
  const clock = deps.clock ?? (() => new Date());
  const readForm = formReader(30, 'the form sent too many fields; start again from the application');
  const findClient = async (id: string) => (/^[0-9a-f-]{36}$/i.test(id) ? deps.oauth.findClient(id) : null);

  const signedIn = (req: Request, res: Response) => pageCaller(req, res, deps.tokens, clock());

  async function organizationsOf(userId: string): Promise<OrganizationChoice[]> {
    const memberships = await deps.memberships.listForUser(userId);
    const found = await Promise.all(memberships.map((m) => deps.organizations.findById(m.orgId)));
    return found.filter((o): o is OrganizationChoice => o !== null).map((o) => ({ id: o.id, slug: o.slug, name: o.name }));
  }

  /** A page of the flow, for a signed-in person or not, with the redirect URI's origin allowed as a form target. */
  async function flowPage(req: Request, auth: AuthContext | null, request: AuthorizationRequest, page: Pick<Page, 'status' | 'title' | 'body'>): Promise<Page> {
    const user = auth ? await deps.users.findById(auth.userId) : null;
    // The header's sign-out form posts to the request's own URL, so signing out comes back to it.
    const here = `${actionOf(req)}?${new URLSearchParams(request.fields).toString()}`;
    return { ...page, footer: FOOTER, formTargets: [new URL(request.redirectUri).origin], viewer: user ? { email: user.email, action: here } : null };
  }

  async function consentPage(req: Request, auth: AuthContext, request: AuthorizationRequest, error: string | null = null, status = 200): Promise<Page> {
    const organizations = await organizationsOf(auth.userId);
    const body = consentView({
      action: actionOf(req),
      request: viewOf(request),
      organizations,
      selectedOrgId: auth.orgId,
      accessMinutes: Math.round(deps.accessTokenTtlSeconds / 60),
      refreshDays: deps.refreshTokenTtlDays,
      error,
    });
    return flowPage(req, auth, request, { status, title: `Allow ${request.client.name}?`, body });
  }

  /** The request, or the answer to a bad one: a page (no trusted redirect URI) or the client's redirect. */
  function refusal(res: Response, check: Exclude<RequestCheck, { ok: true }>): Page | null {
    if (check.redirect === null) return { status: 400, title: 'Authorization request refused', body: requestProblemView({ message: check.message }), footer: FOOTER };
    res.redirect(303, redirectWith(check.redirect, { error: check.error, error_description: check.description, state: check.state }));
    return null;
  }

  async function approve(req: Request, res: Response, auth: AuthContext, request: AuthorizationRequest, orgSlug: string): Promise<Page | null> {
    const organizations = await organizationsOf(auth.userId);
    const org = orgSlug === '' ? organizations.find((o) => o.id === auth.orgId) : organizations.find((o) => o.slug === orgSlug);
    if (!org) return consentPage(req, auth, request, `You are not a member of an organization "${orgSlug}"; choose one of yours.`, 403);
    const now = clock();
    await deps.oauth.deleteExpiredCodes(new Date(now.getTime() - EXPIRED_RETENTION_MS), 100);
    const code = randomBytes(32).toString('base64url');
    await deps.oauth.createCode({
      codeHash: hashToken(code),
      clientId: request.client.id,
      userId: auth.userId,
      orgId: org.id,
      scopes: request.scopes,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      resource: request.resource,
      expiresAt: new Date(now.getTime() + deps.codeTtlSeconds * 1000),
    });
    res.redirect(303, redirectWith(request.redirectUri, { code, state: request.state }));
    return null;
  }

  const page = (handler: (req: Request, res: Response) => Promise<Page | null>) => async (req: Request, res: Response): Promise<void> => {
    res.locals.route = PATH;
    res.set('Cache-Control', 'no-store');
    let result: Page | null;
    try {
      result = await handler(req, res);
    } catch (err) {
      const error = fromRequestParsing(err, req) ?? toAppError(err);
      if (error.status >= 500) deps.log.error({ err, requestId: res.locals.requestId }, 'MCP authorization page failed');
      const message = error.status >= 500 ? `Something went wrong on our side; try again in a moment (request ${String(res.locals.requestId ?? '')}).` : error.message;
      result = { status: error.status, title: 'Request refused', body: requestProblemView({ message }), footer: FOOTER };
    }
    if (result) sendPage(res, result);
  };

  router.get(PATH, page(async (req, res) => {
    const check = await checkAuthorizationRequest(req.query as Record<string, unknown>, findClient, deps.resource);
    if (!check.ok) return refusal(res, check);
    const { auth, why } = await signedIn(req, res);
    if (!auth) return flowPage(req, null, check.request, { status: 200, title: 'Sign in', body: authorizeSignInView({ action: actionOf(req), request: viewOf(check.request), error: why }) });
    return consentPage(req, auth, check.request);
  }));

  router.post(PATH, page(async (req, res) => {
    // Before the body is read: a forged post is refused whatever it holds (sign-in included).
    assertSameOrigin(req);
    const body = await readForm(req, res);
    if (formField(body, 'action') === 'sign-out') {
      await deps.browserSessions.signOut(req, res);
      // Back to the request (the sign-out form's URL carries it), now at the sign-in form.
      res.redirect(303, req.originalUrl);
      return null;
    }
    const check = await checkAuthorizationRequest(body, findClient, deps.resource);
    if (!check.ok) return refusal(res, check);
    const request = check.request;
    const here = `${actionOf(req)}?${new URLSearchParams(request.fields).toString()}`;
    const action = formField(body, 'action');

    if (action === 'sign-in') {
      const email = formField(body, 'email');
      const password = typeof body.password === 'string' ? body.password : '';
      const again = (status: number, error: string) => flowPage(req, null, request, { status, title: 'Sign in', body: authorizeSignInView({ action: actionOf(req), request: viewOf(request), email, error }) });
      if (email === '' || password === '') return again(400, 'Enter your email and password.');
      try {
        await deps.browserSessions.signIn(req, res, { email, password });
      } catch (err) {
        if (!(err instanceof AppError) || !MENDABLE.has(err.code)) throw err;
        const retryAfter = err.details?.retryAfterSeconds;
        if (typeof retryAfter === 'number' && !res.get('Retry-After')) res.set('Retry-After', String(retryAfter));
        return again(err.status, err.message);
      }
      // Post/redirect/get: reloading the consent screen does not sign in again.
      res.redirect(303, here);
      return null;
    }
    if (action !== 'approve' && action !== 'deny') {
      throw new AppError({ code: 'validation_failed', message: 'the form sent no known action (sign-in, approve, deny or sign-out); start again from the application' });
    }
    const { auth, why } = await signedIn(req, res);
    if (!auth) return flowPage(req, null, request, { status: 401, title: 'Sign in', body: authorizeSignInView({ action: actionOf(req), request: viewOf(request), error: why ?? 'Sign in to allow or deny this application.' }) });
    if (action === 'deny') {
      res.redirect(303, redirectWith(request.redirectUri, { error: 'access_denied', error_description: 'the user denied the authorization request', state: request.state }));
      return null;
    }
    return approve(req, res, auth, request, formField(body, 'org'));
  }));

  allowOnly(router, PATH, ['GET', 'POST']);
  return router;
}
