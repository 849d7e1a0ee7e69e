import { randomBytes } from 'node:crypto';
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { ConsentRequestBody } from '../../contract';
import { hashToken } from '../../platform/access-token';
import { AppError, toAppError } from '../../platform/app-error';
import type { OAuthRepository } from '../../store';
import type { TokenLookup } from '../auth/auth-context';
import { assertSameOrigin, pageCaller } from '../auth/authenticate-cookie';
import type { SessionMemberships, SessionOrganizations } from '../auth/browser-sessions';
import { fromRequestParsing } from '../http/request-parse-errors';
import { requestProblemView, type OrganizationChoice } from '../pages/mcp-authorize-views';
import { formField, formReader } from '../pages/form-posts';
import { sendPage, type Page } from '../pages/page-layout';
import { checkAuthorizationRequest, redirectWith, type AuthorizationRequest, type RequestCheck } from './mcp-authorization-request';
import { ISSUER_PATH } from './mcp-oauth-routes';
import { allowOnly } from './route-marks';
import type { StudioPageOptions } from './studio-routes';

export interface McpAuthorizePageDeps {
  /** Authentication of the session cookie (the service's token lookup, which notes usage). */
  tokens: TokenLookup;
  memberships: SessionMemberships;
  organizations: Pick<SessionOrganizations, 'findById'>;
  oauth: Pick<OAuthRepository, 'findClient' | 'createCode' | 'deleteExpiredCodes'>;
  /** Sends the studio's index.html, whose router draws the consent page (`sendStudioPage` over the build). */
  studioPage: (res: Response, options: StudioPageOptions) => void;
  /** `$PUBLIC_BASE_URL/mcp`. */
  resource: string;
  codeTtlSeconds: number;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  log: Logger;
  clock?: () => Date;
}

const PATH = `${ISSUER_PATH}/authorize`;
const DETAILS_PATH = `${PATH}/request`;
/** Expired codes are kept this long (a late exchange is told "expired"), then deleted. */
const EXPIRED_RETENTION_MS = 24 * 3600 * 1000;
const FOOTER = 'Only allow applications you are connecting yourself.';

/**
 * Where the redirect URI's answer lands, as a `form-action` source: its origin, or for a private
 * scheme (`cursor://…`, whose origin is opaque) the scheme itself.
 */
function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

/**
 * The authorization endpoint of the MCP authorization server (docs/auth.md, "OAuth for MCP
 * clients"; docs/mcp.md, "The consent page"). Every GET and POST checks the authorization request
 * (client, exact redirect URI, PKCE, resource, scope). A request that cannot be trusted is shown
 * here and never redirected (RFC 6749 §4.1.2.1); other problems go back to the client. A good
 * one is answered with the studio, whose consent page (signing in first through the studio's
 * sign-in when needed) reads `GET /oauth/mcp/authorize/request` with the same query and posts
 * the decision back here as a plain form: on Allow an authorization code goes to the redirect
 * URI, on Deny `error=access_denied`.
 */
export function createMcpAuthorizePageRouter(deps: McpAuthorizePageDeps): Router {
  const router = Router();
  const clock = deps.clock ?? (() => new Date());
  const readForm = formReader(30, 'the form sent too many fields; start again from the application');
  const findClient = async (id: string) => (/^[0-9a-f-]{36}$/i.test(id) ? deps.oauth.findClient(id) : null);
  const check = (source: unknown) => checkAuthorizationRequest((source ?? {}) as Record<string, unknown>, findClient, deps.resource);

  async function organizationsOf(userId: string): Promise<OrganizationChoice[]> {
    const memberships = await deps.memberships.listForUser(userId);
    const found = await Promise.all(memberships.map((m) => deps.organizations.findById(m.orgId)));
    return found.filter((o): o is OrganizationChoice => o !== null).map((o) => ({ id: o.id, slug: o.slug, name: o.name }));
  }

  const problem = (status: number, message: string): Page => ({ status, title: 'Authorization request refused', body: requestProblemView({ message }), footer: FOOTER });

  /** The answer to a bad request: a page (no trusted redirect URI) or the client's redirect. */
  function refusal(res: Response, bad: Exclude<RequestCheck, { ok: true }>): Page | null {
    if (bad.redirect === null) return problem(400, bad.message);
    res.redirect(303, redirectWith(bad.redirect, { error: bad.error, error_description: bad.description, state: bad.state }));
    return null;
  }

  async function approve(res: Response, auth: { userId: string; orgId: string }, request: AuthorizationRequest, orgSlug: string): Promise<Page | null> {
    const organizations = await organizationsOf(auth.userId);
    const org = orgSlug === '' ? organizations.find((o) => o.id === auth.orgId) : organizations.find((o) => o.slug === orgSlug);
    if (!org) return problem(403, `You are not a member of an organization "${orgSlug}"; go back and choose one of yours.`);
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

  /** The endpoint's one translator of failures: a small HTML page with the error's status. */
  const page = (handler: (req: Request, res: Response) => Promise<Page | null | 'sent'>) => async (req: Request, res: Response): Promise<void> => {
    res.locals.route = PATH;
    res.set('Cache-Control', 'no-store');
    let result: Page | null | 'sent';
    try {
      result = await handler(req, res);
    } catch (err) {
      const error = fromRequestParsing(err, req) ?? toAppError(err);
      if (error.status >= 500) deps.log.error({ err, requestId: res.locals.requestId }, 'MCP authorization endpoint failed');
      const message = error.status >= 500 ? `Something went wrong on our side; try again in a moment (request ${String(res.locals.requestId ?? '')}).` : error.message;
      result = problem(error.status, message);
    }
    if (result && result !== 'sent') sendPage(res, result);
  };

  router.get(PATH, page(async (req, res) => {
    const checked = await check(req.query);
    if (!checked.ok) return refusal(res, checked);
    // The studio draws the consent page; its Allow posts here and is redirected to the client.
    deps.studioPage(res, { formTargets: [formTarget(checked.request.redirectUri)], cacheControl: 'no-store' });
    return 'sent';
  }));

  // The consent page's description of the request: JSON, with the service's JSON errors.
  router.get(DETAILS_PATH, (req: Request, res: Response, next: NextFunction) => {
    res.locals.route = DETAILS_PATH;
    res.set('Cache-Control', 'no-store');
    check(req.query)
      .then((checked) => {
        if (!checked.ok) {
          const message = checked.redirect === null ? checked.message : `${checked.error}: ${checked.description}`;
          throw new AppError({ code: 'validation_failed', message });
        }
        const { request } = checked;
        const body: ConsentRequestBody = {
          client: { id: request.client.id, name: request.client.name },
          redirectUri: request.redirectUri,
          redirectHost: new URL(request.redirectUri).host || request.redirectUri,
          scopes: request.scopes,
          fields: request.fields,
          accessMinutes: Math.round(deps.accessTokenTtlSeconds / 60),
          refreshDays: deps.refreshTokenTtlDays,
        };
        res.json(body);
      })
      .catch(next);
  });

  router.post(PATH, page(async (req, res) => {
    // Before the body is read: a forged post is refused whatever it holds.
    assertSameOrigin(req);
    const body = await readForm(req, res);
    const checked = await check(body);
    if (!checked.ok) return refusal(res, checked);
    const request = checked.request;
    const action = formField(body, 'action');
    if (action !== 'approve' && action !== 'deny') {
      throw new AppError({ code: 'validation_failed', message: 'the form sent no known action (approve or deny); start again from the application' });
    }
    const { auth, why } = await pageCaller(req, res, deps.tokens, clock());
    if (!auth) return problem(401, `${why ?? 'You are signed out.'} Go back, sign in and decide again.`);
    if (action === 'deny') {
      res.redirect(303, redirectWith(request.redirectUri, { error: 'access_denied', error_description: 'the user denied the authorization request', state: request.state }));
      return null;
    }
    return approve(res, auth, request, formField(body, 'org'));
  }));

  allowOnly(router, PATH, ['GET', 'POST']);
  allowOnly(router, DETAILS_PATH, ['GET']);
  return router;
}
