import { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { AppError, toAppError } from '../../platform/app-error';
import type { AuthContext, TokenLookup } from '../auth/auth-context';
import { assertSameOrigin, pageCaller } from '../auth/authenticate-cookie';
import type { BrowserSessions, SessionMemberships, SessionOrganizations, SessionUsers } from '../auth/browser-sessions';
import type { CallContext } from '../handlers/handler-types';
import { fromRequestParsing } from '../http/request-parse-errors';
import type { Invoke } from '../invoke/invoke';
import { codeView, confirmView, problemView, resultView, signInView, type DeviceRequestView, type OrganizationChoice } from '../pages/device-page-views';
import { formField, formReader } from '../pages/form-posts';
import { sendPage, type Page } from '../pages/page-layout';
import { allowOnly } from './route-marks';

export interface DevicePageDeps {
  /** The call path of `device.lookup`, `device.approve` and `device.deny`: the approval rules live there. */
  invoke: Invoke;
  /** Authentication of the session cookie (the service's token lookup, which notes usage). */
  tokens: TokenLookup;
  /** Password sign-in and sign-out, as `POST /auth/sign-in` and `/auth/sign-out` do them. */
  browserSessions: BrowserSessions;
  users: Pick<SessionUsers, 'findById'>;
  memberships: SessionMemberships;
  organizations: Pick<SessionOrganizations, 'findById'>;
  /** Lifetime of the session token an approval issues, shown to the approver. */
  sessionTokenTtlDays: number;
  log: Logger;
  clock?: () => Date;
}

const PATH = '/device';

/** The page's own address, under `/api` when that is how it was reached. */
const actionOf = (req: Request): string => `${req.baseUrl}${PATH}`;

/** Refusals the person can mend by typing again: the form is shown again with the message. */
const MENDABLE = new Set(['validation_failed', 'unauthorized', 'forbidden', 'insufficient_scope', 'not_found', 'gone', 'conflict', 'rate_limited']);

/** The refusal to show on the form, or null for a failure to hand on; a rate limit's wait goes in `Retry-After`. */
function mendable(err: unknown, res: Response): AppError | null {
  if (!(err instanceof AppError) || !MENDABLE.has(err.code)) return null;
  const retryAfter = err.details?.retryAfterSeconds;
  if (typeof retryAfter === 'number' && !res.get('Retry-After')) res.set('Retry-After', String(retryAfter));
  return err;
}

/**
 * The device-login approval page (docs/auth.md, "The approval page"), served as HTML without
 * script: sign in with the editor's password sign-in, enter or confirm the code, choose the
 * organization, approve or deny. It decides nothing itself: lookups and decisions go through
 * `invoke` as `device.lookup`, `device.approve` and `device.deny` with the cookie's caller, so
 * their rules (scopes, membership, brute-force limits) are the JSON routes' own. Every post
 * passes the CSRF guard before its body is read.
 */
export function createDevicePageRouter(deps: DevicePageDeps): Router {
  const router = Router();
  const clock = deps.clock ?? (() => new Date());
  const readForm = formReader(20, 'the form sent too many fields; reload the page and try again');

  const signedIn = (req: Request, res: Response) => pageCaller(req, res, deps.tokens, clock());

  function callContext(req: Request, res: Response, auth: AuthContext): CallContext {
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    const requestId = String(res.locals.requestId ?? '');
    return { auth, requestId, log: deps.log.child({ requestId }), signal: controller.signal, clientAddress: req.ip ?? req.socket.remoteAddress ?? 'unknown' };
  }

  /** The organizations the person may approve for, oldest membership first. */
  async function organizationsOf(userId: string): Promise<OrganizationChoice[]> {
    const memberships = await deps.memberships.listForUser(userId);
    const found = await Promise.all(memberships.map((m) => deps.organizations.findById(m.orgId)));
    return found.filter((o): o is OrganizationChoice => o !== null).map((o) => ({ id: o.id, slug: o.slug, name: o.name }));
  }

  /** A page for the signed-in person, with their email and the sign-out form in its header. */
  async function personPage(req: Request, auth: AuthContext, page: Omit<Page, 'viewer'>): Promise<Page> {
    const user = await deps.users.findById(auth.userId);
    return { ...page, viewer: user ? { email: user.email, action: actionOf(req) } : null };
  }

  /** The confirmation for a typed code, or the code form again with why it cannot be decided. */
  async function codePage(req: Request, res: Response, auth: AuthContext, typed: string, refusal: AppError | null = null): Promise<Page> {
    const action = actionOf(req);
    const error = refusal?.message ?? null;
    if (typed === '') return personPage(req, auth, { status: 200, title: 'Enter your code', body: codeView({ action, userCode: '', error }) });
    try {
      const request = (await deps.invoke('device.lookup', { user_code: typed }, callContext(req, res, auth))) as DeviceRequestView;
      const organizations = await organizationsOf(auth.userId);
      const body = confirmView({ action, request, organizations, selectedOrgId: auth.orgId, sessionDays: deps.sessionTokenTtlDays, error });
      return personPage(req, auth, { status: refusal?.status ?? 200, title: 'Approve this login?', body });
    } catch (err) {
      const refused = mendable(err, res);
      if (!refused) throw err;
      return personPage(req, auth, { status: refused.status, title: 'Enter your code', body: codeView({ action, userCode: typed, error: refused.message }) });
    }
  }

  async function decide(req: Request, res: Response, auth: AuthContext, decision: 'approve' | 'deny', body: unknown): Promise<Page> {
    const typed = formField(body, 'user_code');
    const org = formField(body, 'org');
    const ctx = callContext(req, res, auth);
    try {
      if (decision === 'deny') {
        const denied = (await deps.invoke('device.deny', { user_code: typed }, ctx)) as DeviceRequestView;
        return personPage(req, auth, { status: 200, title: 'Denied', body: resultView({ outcome: 'denied', request: denied }) });
      }
      const approved = (await deps.invoke('device.approve', { user_code: typed, ...(org ? { org } : {}) }, ctx)) as DeviceRequestView & { organization: OrganizationChoice };
      return personPage(req, auth, { status: 200, title: 'Approved', body: resultView({ outcome: 'approved', request: approved, organization: approved.organization }) });
    } catch (err) {
      const refused = mendable(err, res);
      if (!refused) throw err;
      // A refusal about the organization or scopes leaves the code pending: confirm again.
      if (refused.code === 'insufficient_scope' || (refused.code === 'not_found' && org !== '')) return codePage(req, res, auth, typed, refused);
      return personPage(req, auth, { status: refused.status, title: 'Enter your code', body: codeView({ action: actionOf(req), userCode: typed, error: refused.message }) });
    }
  }

  /** The page's one translator of failures: an HTML page with the error's status. */
  const page = (handler: (req: Request, res: Response) => Promise<Page | null>) => async (req: Request, res: Response): Promise<void> => {
    res.locals.route = PATH;
    let result: Page | null;
    try {
      result = await handler(req, res);
    } catch (err) {
      const error = fromRequestParsing(err, req) ?? toAppError(err);
      if (error.status >= 500) deps.log.error({ err, requestId: res.locals.requestId }, 'device page failed');
      const retryAfter = error.details?.retryAfterSeconds;
      if (typeof retryAfter === 'number' && !res.get('Retry-After')) res.set('Retry-After', String(retryAfter));
      const forbidden = error.code === 'forbidden';
      const message = error.status >= 500 ? `Something went wrong on our side; try again in a moment (request ${String(res.locals.requestId ?? '')}).` : error.message;
      result = { status: error.status, title: forbidden ? 'Request refused' : 'Something went wrong', body: problemView({ heading: forbidden ? 'Request refused' : 'Something went wrong', message, action: actionOf(req) }) };
    }
    if (result) sendPage(res, result);
  };

  router.get(PATH, page(async (req, res) => {
    const typed = formField(req.query, 'user_code');
    const { auth, why } = await signedIn(req, res);
    if (!auth) return { status: 200, title: 'Sign in', body: signInView({ action: actionOf(req), userCode: typed, error: why }) };
    return codePage(req, res, auth, typed);
  }));

  router.post(PATH, page(async (req, res) => {
    // Before the body is read: a forged post is refused whatever it holds (sign-in included).
    assertSameOrigin(req);
    const body = await readForm(req, res);
    const action = formField(body, 'action');
    const typed = formField(body, 'user_code');
    const here = actionOf(req);

    if (action === 'sign-out') {
      await deps.browserSessions.signOut(req, res);
      res.redirect(303, here);
      return null;
    }
    if (action === 'sign-in') {
      const email = formField(body, 'email');
      const password = typeof (body as Record<string, unknown>).password === 'string' ? ((body as Record<string, unknown>).password as string) : '';
      if (email === '' || password === '') return { status: 400, title: 'Sign in', body: signInView({ action: here, userCode: typed, email, error: 'Enter your email and password.' }) };
      try {
        await deps.browserSessions.signIn(req, res, { email, password });
      } catch (err) {
        const refused = mendable(err, res);
        if (!refused) throw err;
        return { status: refused.status, title: 'Sign in', body: signInView({ action: here, userCode: typed, email, error: refused.message }) };
      }
      // Post/redirect/get: reloading the next page does not sign in again.
      res.redirect(303, typed ? `${here}?user_code=${encodeURIComponent(typed)}` : here);
      return null;
    }
    if (action !== 'approve' && action !== 'deny') {
      throw new AppError({ code: 'validation_failed', message: 'the form sent no known action (sign-in, approve, deny or sign-out); reload the page and try again' });
    }
    const { auth, why } = await signedIn(req, res);
    if (!auth) return { status: 401, title: 'Sign in', body: signInView({ action: here, userCode: typed, error: why ?? 'Sign in to approve or deny this code.' }) };
    return decide(req, res, auth, action, body);
  }));

  allowOnly(router, PATH, ['GET', 'POST']);
  return router;
}
