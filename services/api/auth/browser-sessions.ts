import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { SignInInputSchema, SwitchOrgInputSchema, validate, type SessionBody } from '../../contract';
import { issueToken, parseToken } from '../../platform/access-token';
import { AppError } from '../../platform/app-error';
import { dummyPasswordHash, verifyPassword } from '../../platform/passwords';
import type { RateLimitResult, RateLimitRule } from '../../queue/rate-limiter';
import type { MemberOrganization, NewToken } from '../../store';
import type { TokenRecord } from './auth-context';
import { assertSameOrigin } from './authenticate-cookie';
import { sessionBody } from './session-body';
import { clearedSessionCookie, readSessionCookie, sessionCookie, sitePolicyFor } from './session-cookie';

/** Port: users with their password hash (`UserRepository` satisfies it). */
export interface SessionUsers {
  findCredentialsByEmail(email: string): Promise<{ id: string; email: string; name: string; passwordHash: string | null } | null>;
  findById(id: string): Promise<{ id: string; email: string; name: string } | null>;
}

/** Port: a user's memberships, oldest first (`MembershipRepository` satisfies it). */
export interface SessionMemberships {
  listForUser(userId: string): Promise<{ orgId: string }[]>;
  /** The organizations with the user's role and their available balance. */
  listOrganizationsOfUser(userId: string): Promise<MemberOrganization[]>;
}

/** Port: organizations (`OrganizationRepository` satisfies it). */
export interface SessionOrganizations {
  findById(id: string): Promise<{ id: string; slug: string; name: string } | null>;
  findBySlug(slug: string): Promise<{ id: string; slug: string; name: string } | null>;
}

/** Port: the `access_tokens` rows of browser sessions (`TokenRepository` satisfies it). */
export interface SessionTokens {
  create(input: NewToken & { kind: 'browser'; expiresAt: Date }): Promise<{ id: string }>;
  findByHash(hash: string): Promise<TokenRecord | null>;
  findById(id: string): Promise<{ expiresAt: Date | null } | null>;
  revoke(id: string, options?: { at?: Date }): Promise<boolean>;
}

/** Port: counts failed sign-ins (`RateLimiter` satisfies it). */
export interface SignInLimiter {
  hit(rule: RateLimitRule, key: string, cost?: number): Promise<RateLimitResult>;
  reset(rule: RateLimitRule, key: string): Promise<void>;
}

export interface BrowserSessionDeps {
  users: SessionUsers;
  memberships: SessionMemberships;
  organizations: SessionOrganizations;
  /** Where sessions are stored. */
  sessions: SessionTokens;
  limiter: SignInLimiter;
  /** Lifetime of a session (cookie and row), hours. */
  sessionHours: number;
  /** Failed sign-ins allowed per email and per client IP within `failureWindowSeconds`. */
  maxFailuresPerEmail: number;
  maxFailuresPerIp: number;
  failureWindowSeconds: number;
  now?: () => Date;
}

/**
 * Password sign-in and sign-out of the web editor's cookie sessions (docs/auth.md, "Web editor
 * sessions and CSRF"), shared by every page that signs people in: `POST /auth/sign-in` and the
 * device-login page. Both refuse requests from any origin but the service's own.
 */
export interface BrowserSessions {
  /**
   * Checks `{ email, password, org? }`, stores a browser session (only its hash), replaces the
   * browser's previous one and sets the `svc_session` cookie on `res`. Refusals are AppErrors:
   * `validation_failed`, `unauthorized` (one message for unknown email and wrong password),
   * `forbidden` (not a member of `org`), `rate_limited` (with `Retry-After` set on `res`).
   */
  signIn(req: Request, res: Response, input: unknown): Promise<SessionBody>;
  /**
   * `{ org }`: moves the cookie's session to another organization the user belongs to: a new
   * session in that organization (expiring when the old one would have), the old one revoked,
   * a new cookie. Refusals: `forbidden` (another origin; not a member of `org`), `unauthorized`
   * (no live cookie session), `validation_failed`.
   */
  switchOrganization(req: Request, res: Response, input: unknown): Promise<SessionBody>;
  /** Revokes the cookie's session, if any, and clears the cookie; idempotent. */
  signOut(req: Request, res: Response): Promise<void>;
}

/** The scopes of a web editor session: the editor both reads and runs. */
export const BROWSER_SESSION_SCOPES = ['read', 'run'] as const;

const WRONG_CREDENTIALS = 'the email or password is wrong';

/** A stable, non-reversible key for an email in Redis (no addresses in key names). */
function emailKey(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32);
}

function rateLimited(result: RateLimitResult, res: Response, whose: string): AppError {
  const seconds = Math.max(1, Math.ceil(result.resetMs / 1000));
  res.set('Retry-After', String(seconds));
  return new AppError({ code: 'rate_limited', message: `too many failed sign-ins ${whose}; try again in ${seconds} seconds`, details: { retryAfterSeconds: seconds } });
}

export function createBrowserSessions(deps: BrowserSessionDeps): BrowserSessions {
  const now = deps.now ?? (() => new Date());
  const window = deps.failureWindowSeconds * 1000;
  const perEmail: RateLimitRule = { name: 'sign-in-email', limit: deps.maxFailuresPerEmail, windowMs: window };
  const perIp: RateLimitRule = { name: 'sign-in-ip', limit: deps.maxFailuresPerIp, windowMs: window };
  // Computed now, so the first sign-in of an unknown email takes no longer than any other.
  void dummyPasswordHash();

  /** The session the request's cookie names, if it is a live browser session. */
  async function cookieSession(req: Request): Promise<TokenRecord | null> {
    const value = readSessionCookie(req);
    const parsed = value === null ? null : parseToken(value);
    if (!parsed?.ok || parsed.kind !== 'browser') return null;
    const record = await deps.sessions.findByHash(parsed.hash);
    return record && record.kind === 'browser' && record.revokedAt === null ? record : null;
  }

  /** Stores a browser session (only its hash) and sets its cookie, which lives until `expiresAt`. */
  async function startSession(req: Request, res: Response, session: { userId: string; orgId: string; expiresAt: Date }): Promise<void> {
    const issued = issueToken('browser');
    await deps.sessions.create({
      ...session,
      name: 'web editor sign-in',
      hash: issued.hash,
      displayPrefix: issued.displayPrefix,
      scopes: BROWSER_SESSION_SCOPES,
      kind: 'browser',
    });
    const secure = sitePolicyFor(req)?.secure ?? false;
    const maxAgeSeconds = Math.max(1, Math.round((session.expiresAt.getTime() - now().getTime()) / 1000));
    res.append('Set-Cookie', sessionCookie(issued.value, { secure, maxAgeSeconds }));
  }

  return {
    async signIn(req, res, raw) {
      // A forged sign-in would put the victim in the attacker's account.
      assertSameOrigin(req);
      const checked = validate(SignInInputSchema, raw);
      if (!checked.ok) throw new AppError({ code: 'validation_failed', message: checked.message, details: { issues: checked.issues } });
      const input = checked.value;
      const keys = { email: emailKey(input.email), ip: req.ip ?? 'unknown' };

      // A cost-0 hit reads the counts: the attempt after the last allowed failure is refused unchecked.
      const [byEmail, byIp] = await Promise.all([deps.limiter.hit(perEmail, keys.email, 0), deps.limiter.hit(perIp, keys.ip, 0)]);
      if (byEmail.remaining === 0) throw rateLimited(byEmail, res, 'for this email');
      if (byIp.remaining === 0) throw rateLimited(byIp, res, 'from your address');

      const user = await deps.users.findCredentialsByEmail(input.email);
      // Unknown users (and users without a password) are checked against a dummy hash: same time.
      const matches = await verifyPassword(input.password, user?.passwordHash ?? (await dummyPasswordHash()));
      if (!user || user.passwordHash === null || !matches) {
        await Promise.all([deps.limiter.hit(perEmail, keys.email), deps.limiter.hit(perIp, keys.ip)]);
        throw new AppError({ code: 'unauthorized', message: WRONG_CREDENTIALS });
      }
      await deps.limiter.reset(perEmail, keys.email);

      const memberships = await deps.memberships.listForUser(user.id);
      let organization: { id: string; slug: string; name: string } | null;
      if (input.org !== undefined) {
        const chosen = await deps.organizations.findBySlug(input.org);
        organization = chosen && memberships.some((m) => m.orgId === chosen.id) ? chosen : null;
        if (!organization) throw new AppError({ code: 'forbidden', message: `you are not a member of an organization "${input.org}"` });
      } else {
        organization = memberships.length > 0 ? await deps.organizations.findById(memberships[0]!.orgId) : null;
        if (!organization) throw new AppError({ code: 'forbidden', message: 'your account belongs to no organization yet; ask an administrator to add you to one' });
      }

      // Signing in replaces the browser's previous session.
      const previous = await cookieSession(req);
      if (previous) await deps.sessions.revoke(previous.id, { at: now() });

      const expiresAt = new Date(now().getTime() + deps.sessionHours * 3_600_000);
      await startSession(req, res, { userId: user.id, orgId: organization.id, expiresAt });
      const body = sessionBody(user, await deps.memberships.listOrganizationsOfUser(user.id), organization.id, expiresAt);
      if (!body) throw new AppError({ code: 'forbidden', message: `you are no longer a member of "${organization.slug}"; sign in again` });
      return body;
    },

    async switchOrganization(req, res, raw) {
      // A forged switch would move the victim's editor into another of their organizations.
      assertSameOrigin(req);
      const session = await cookieSession(req);
      if (!session || session.expiresAt === null || session.expiresAt.getTime() <= now().getTime()) {
        throw new AppError({ code: 'unauthorized', message: 'not signed in: switching organizations needs a web editor session; sign in with POST /auth/sign-in' });
      }
      const checked = validate(SwitchOrgInputSchema, raw);
      if (!checked.ok) throw new AppError({ code: 'validation_failed', message: checked.message, details: { issues: checked.issues } });
      const [user, organizations] = await Promise.all([deps.users.findById(session.userId), deps.memberships.listOrganizationsOfUser(session.userId)]);
      if (!user) throw new AppError({ code: 'unauthorized', message: 'your web editor session no longer matches an account; sign in again' });
      const target = organizations.find((org) => org.slug === checked.value.org);
      if (!target) throw new AppError({ code: 'forbidden', message: `you are not a member of an organization "${checked.value.org}"` });

      // A switch does not lengthen the session: the new one ends when the old one would have.
      const expiresAt = session.expiresAt;
      await startSession(req, res, { userId: user.id, orgId: target.id, expiresAt });
      await deps.sessions.revoke(session.id, { at: now() });
      return sessionBody(user, organizations, target.id, expiresAt)!;
    },

    async signOut(req, res) {
      if (readSessionCookie(req) !== null) {
        // A forged sign-out would sign the victim out of their account.
        assertSameOrigin(req);
        const session = await cookieSession(req);
        if (session) await deps.sessions.revoke(session.id, { at: now() });
      }
      res.append('Set-Cookie', clearedSessionCookie({ secure: sitePolicyFor(req)?.secure ?? false }));
    },
  };
}
