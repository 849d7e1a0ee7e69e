import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { sessionCookie, sitePolicyOf } from '../../services/api/auth/session-cookie';
import { SessionBodySchema, validate } from '../../services/contract';
import { hashToken } from '../../services/platform/access-token';
import { loadConfig } from '../../services/platform/config';
import { MembershipRepository, OrganizationRepository, UserRepository } from '../../services/store';
import { createBrowserSession, createPasswordUser } from '../support/browser-session';
import { bearer, startTestService, type TestService } from '../support/service';

const SESSION_HOURS = 48;

describe('web editor sign-in and sign-out', () => {
  let service: TestService;
  let origin: string;
  /** Each test signs in from its own address, so the per-IP counts of failures do not mix. */
  let ip = 0;
  const nextIp = () => `203.0.113.${++ip}`;

  beforeAll(async () => {
    service = await startTestService({
      env: {
        BROWSER_SESSION_HOURS: String(SESSION_HOURS),
        SIGN_IN_MAX_FAILURES_PER_EMAIL: '3',
        SIGN_IN_MAX_FAILURES_PER_IP: '5',
        SIGN_IN_FAILURE_WINDOW_SECONDS: '600',
        TRUST_PROXY: 'true',
      },
    });
    origin = new URL(service.url).origin;
  });

  afterAll(async () => {
    await service?.close();
  });

  const signIn = (body: unknown, from = nextIp()) =>
    request(service.url).post('/auth/sign-in').set('Origin', origin).set('X-Forwarded-For', from).set('Content-Type', 'application/json').send(JSON.stringify(body));

  /** `name=value` of the session cookie a response sets, and its attributes. */
  function setCookieOf(res: request.Response): { pair: string; attributes: string[] } {
    const header = res.headers['set-cookie'] as unknown as string[] | undefined;
    expect(header).toHaveLength(1);
    const [pair, ...attributes] = header![0]!.split('; ');
    return { pair: pair!, attributes };
  }

  it('signs in with the right password: a browser session row (its hash only) and an HttpOnly, SameSite=Lax cookie', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const res = await signIn({ email: user.email.toUpperCase(), password: user.password });
    expect(res.status).toBe(200);
    expect(validate(SessionBodySchema, res.body).ok).toBe(true);
    expect(res.body).toMatchObject({ user: { id: user.id, email: user.email }, organization: { id: service.account.orgId } });
    expect(res.headers['cache-control']).toBe('no-store');

    const { pair, attributes } = setCookieOf(res);
    expect(pair).toMatch(/^svc_session=svcb_[0-9A-Za-z]{49}$/);
    expect(attributes.sort()).toEqual(['HttpOnly', `Max-Age=${SESSION_HOURS * 3600}`, 'Path=/', 'SameSite=Lax']);

    const value = pair.slice('svc_session='.length);
    const rows = await service.prisma.accessToken.findMany({ where: { userId: user.id } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: 'browser', scopes: ['read', 'run'], tokenHash: hashToken(value), revokedAt: null, orgId: service.account.orgId });
    expect(Math.abs(rows[0]!.expiresAt!.getTime() - (Date.now() + SESSION_HOURS * 3_600_000))).toBeLessThan(60_000);
    expect(JSON.stringify(rows)).not.toContain(value);

    // The cookie signs in: the session, and runs (read and run scopes).
    const session = await request(service.url).get('/auth/session').set('Cookie', pair);
    expect(session.status).toBe(200);
    expect(session.body).toEqual({ ...res.body, expiresAt: rows[0]!.expiresAt!.toISOString() });
    expect((await request(service.url).get('/v1/runs').set('Cookie', pair)).status).toBe(200);
  });

  it('adds Secure to the cookie when the service is served over https', () => {
    const config = loadConfig({ ...service.env, PUBLIC_BASE_URL: 'https://studio.example.com/api' });
    const cookie = sessionCookie('svcb_x', { secure: sitePolicyOf(config.publicBaseUrl).secure, maxAgeSeconds: config.browserSessionHours * 3600 });
    expect(cookie.split('; ')).toEqual(expect.arrayContaining(['Secure', 'HttpOnly', 'SameSite=Lax', `Max-Age=${SESSION_HOURS * 3600}`]));
    expect(sessionCookie('svcb_x', { secure: sitePolicyOf(service.config.publicBaseUrl).secure, maxAgeSeconds: 60 })).not.toContain('Secure');
  });

  it('answers a wrong password, an unknown email and a user without a password with the same 401', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const noPassword = await new UserRepository(service.prisma).create({ email: `nopw-${randomUUID().slice(0, 8)}@example.test`, name: 'No password' });
    const answers = await Promise.all([
      signIn({ email: user.email, password: `${user.password}x` }),
      signIn({ email: `nobody-${randomUUID()}@example.test`, password: user.password }),
      signIn({ email: noPassword.email, password: 'whatever password' }),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ code: 'unauthorized', error: 'the email or password is wrong' });
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    expect(await service.prisma.accessToken.count({ where: { userId: { in: [user.id, noPassword.id] } } })).toBe(0);
  });

  it('refuses sign-in after too many failures for one email with 429 and Retry-After, even with the right password', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    // A success forgets the email's failures.
    for (let i = 0; i < 2; i++) expect((await signIn({ email: user.email, password: 'wrong password' })).status).toBe(401);
    expect((await signIn({ email: user.email, password: user.password })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await signIn({ email: user.email, password: 'wrong password' })).status).toBe(401);
    const limited = await signIn({ email: user.email, password: user.password });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(limited.body.error).toContain('too many failed sign-ins for this email');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
  });

  it('refuses sign-in after too many failures from one address, whatever the email', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const from = nextIp();
    for (let i = 0; i < 5; i++) expect((await signIn({ email: `guess-${i}@example.test`, password: 'wrong password' }, from)).status).toBe(401);
    const limited = await signIn({ email: user.email, password: user.password }, from);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toContain('from your address');
    expect((await signIn({ email: user.email, password: user.password })).status).toBe(200);
  });

  it('signs in to the organization asked for, and only to one the user belongs to', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const second = await new OrganizationRepository(service.prisma).create({ slug: `second-${randomUUID().slice(0, 8)}`, name: 'Second' });
    await new MembershipRepository(service.prisma).create({ orgId: second.id, userId: user.id, role: 'admin' });
    const chosen = await signIn({ email: user.email, password: user.password, org: second.slug });
    expect(chosen.status).toBe(200);
    expect(chosen.body.organization).toEqual({ id: second.id, slug: second.slug, name: 'Second', role: 'admin', balanceUsd: 0 });
    // Every organization of the user, oldest membership first, with the user's role in each.
    const first = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
    expect(chosen.body.organizations).toEqual([
      { id: first.id, slug: first.slug, name: first.name, role: 'member' },
      { id: second.id, slug: second.slug, name: 'Second', role: 'admin' },
    ]);
    const other = await new OrganizationRepository(service.prisma).create({ slug: `other-${randomUUID().slice(0, 8)}`, name: 'Other' });
    const refused = await signIn({ email: user.email, password: user.password, org: other.slug });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain(`not a member of an organization "${other.slug}"`);
  });

  it('refuses a sign-in posted from another site (login CSRF) and a malformed one', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const forged = await request(service.url).post('/auth/sign-in').set('Origin', 'https://attacker.example').set('Content-Type', 'text/plain').send(JSON.stringify({ email: user.email, password: user.password }));
    expect(forged.status).toBe(403);
    expect(forged.headers['set-cookie']).toBeUndefined();
    const extra = await signIn({ email: user.email, password: user.password, remember: true });
    expect(extra.status).toBe(400);
    expect(extra.body.error).toContain('unknown field "remember"');
  });

  it('signs out: revokes the session, clears the cookie, and is idempotent', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const { pair } = setCookieOf(await signIn({ email: user.email, password: user.password }));
    const out = await request(service.url).post('/auth/sign-out').set('Cookie', pair).set('Origin', origin);
    expect(out.status).toBe(204);
    expect(setCookieOf(out).attributes).toEqual(expect.arrayContaining(['Max-Age=0', 'Path=/', 'HttpOnly', 'SameSite=Lax']));
    expect(setCookieOf(out).pair).toBe('svc_session=');
    const row = await service.prisma.accessToken.findFirstOrThrow({ where: { userId: user.id } });
    expect(row.revokedAt).not.toBeNull();

    // The old cookie is refused (and cleared again); signing out again changes nothing.
    const stale = await request(service.url).get('/v1/runs').set('Cookie', pair);
    expect(stale.status).toBe(401);
    expect(stale.body.error).toContain('signed out at');
    expect(setCookieOf(stale).attributes).toContain('Max-Age=0');
    expect((await request(service.url).post('/auth/sign-out').set('Cookie', pair).set('Origin', origin)).status).toBe(204);
    expect((await request(service.url).post('/auth/sign-out')).status).toBe(204);
  });

  it('replaces the previous session when signing in again in the same browser', async () => {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const first = setCookieOf(await signIn({ email: user.email, password: user.password })).pair;
    const second = await request(service.url).post('/auth/sign-in').set('Origin', origin).set('Cookie', first).send({ email: user.email, password: user.password });
    expect(second.status).toBe(200);
    expect((await request(service.url).get('/auth/session').set('Cookie', first)).status).toBe(401);
    expect((await request(service.url).get('/auth/session').set('Cookie', setCookieOf(second).pair)).status).toBe(200);
  });

  it('answers the studio\'s probe with 204 when nobody is signed in, clearing a dead cookie, and with the session otherwise', async () => {
    const none = await request(service.url).get('/auth/session?probe=1');
    expect(none.status).toBe(204);
    expect(none.headers['cache-control']).toBe('no-store');
    const expired = await createBrowserSession(service.prisma, service.account, { expiresAt: new Date(Date.now() - 1000) });
    const dead = await request(service.url).get('/auth/session?probe=1').set('Cookie', expired.cookie);
    expect(dead.status).toBe(204);
    expect(setCookieOf(dead).pair).toBe('svc_session=');
    const live = await createBrowserSession(service.prisma, service.account);
    const signedIn = await request(service.url).get('/auth/session?probe=1').set('Cookie', live.cookie);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.organization.id).toBe(service.account.orgId);
    // Without the probe, the documented 401.
    expect((await request(service.url).get('/auth/session').set('Cookie', expired.cookie)).status).toBe(401);
  });

  it('refuses an expired session with 401 and clears its cookie', async () => {
    const expired = await createBrowserSession(service.prisma, service.account, { expiresAt: new Date(Date.now() - 1000) });
    const res = await request(service.url).get('/v1/runs').set('Cookie', expired.cookie);
    expect(res.status).toBe(401);
    expect(res.body.error).toContain('your web editor session expired at');
    expect(setCookieOf(res).pair).toBe('svc_session=');
  });

  it('uses the bearer token when a request carries both, and never takes a browser session as a bearer token', async () => {
    const session = await createBrowserSession(service.prisma, service.account);
    const both = await request(service.url).get('/v1/runs').set('Cookie', session.cookie).set(bearer('svc_broken'));
    expect(both.status).toBe(401);
    expect(both.body.error).toContain('the access token is malformed');
    const asBearer = await request(service.url).get('/v1/runs').set(bearer(session.value));
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.error).toContain('cannot be used as a bearer token');
    // GET /auth/session is for the cookie only.
    expect((await request(service.url).get('/auth/session').set(bearer(service.account.token))).status).toBe(403);
    const signedOut = await request(service.url).get('/auth/session');
    expect(signedOut.status).toBe(401);
    expect(signedOut.body.error).toContain('not signed in');
  });

  it('serves the node catalog with a stale cookie, dropping the cookie', async () => {
    const res = await request(service.url).get('/v1/nodes?limit=1').set('Cookie', 'svc_session=svcb_not-a-session');
    expect(res.status).toBe(200);
    expect(setCookieOf(res).pair).toBe('svc_session=');
  });

  it('answers 405 for other methods on the session routes', async () => {
    const res = await request(service.url).get('/auth/sign-in');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    const switchGet = await request(service.url).get('/auth/switch');
    expect(switchGet.status).toBe(405);
    expect(switchGet.headers.allow).toBe('POST');
  });

  describe('the organization a session acts in', () => {
    /** A user signed in to the seeded organization and also a member of a second one; its cookie. */
    async function twoOrgUser(role: 'owner' | 'admin' | 'member' = 'owner') {
      const user = await createPasswordUser(service.prisma, service.account.orgId);
      const second = await new OrganizationRepository(service.prisma).create({ slug: `team-${randomUUID().slice(0, 8)}`, name: 'Team' });
      await new MembershipRepository(service.prisma).create({ orgId: second.id, userId: user.id, role });
      const signedIn = await signIn({ email: user.email, password: user.password });
      expect(signedIn.status).toBe(200);
      return { user, second, signedIn, cookie: setCookieOf(signedIn).pair };
    }

    const switchTo = (cookie: string | null, body: unknown, from = origin) => {
      const req = request(service.url).post('/auth/switch').set('Origin', from).set('Content-Type', 'application/json');
      return (cookie === null ? req : req.set('Cookie', cookie)).send(JSON.stringify(body));
    };

    it("answers the user's role and the organization's available balance (less what unfinished runs hold) with the session", async () => {
      const { second, cookie } = await twoOrgUser('admin');
      // 2.5 USD credited, 0.75 USD held by unfinished runs: 1.75 USD available, as a 402 would report.
      await service.prisma.organization.update({ where: { id: second.id }, data: { balanceMicros: 2_500_000n, heldMicros: 750_000n } });
      const switched = await switchTo(cookie, { org: second.slug });
      expect(switched.status).toBe(200);
      const session = await request(service.url).get('/auth/session').set('Cookie', setCookieOf(switched).pair);
      expect(validate(SessionBodySchema, session.body).ok).toBe(true);
      expect(session.body.organization).toEqual({ id: second.id, slug: second.slug, name: 'Team', role: 'admin', balanceUsd: 1.75 });
      // Never shown below zero.
      await service.prisma.organization.update({ where: { id: second.id }, data: { balanceMicros: 100n, heldMicros: 750_000n } });
      expect((await request(service.url).get('/auth/session').set('Cookie', setCookieOf(switched).pair)).body.organization.balanceUsd).toBe(0);
    });

    it('switches to another organization of the user: a new session there, the old one revoked, a new cookie', async () => {
      const { user, second, signedIn, cookie } = await twoOrgUser();
      const before = await service.prisma.accessToken.findFirstOrThrow({ where: { userId: user.id, revokedAt: null } });
      const switched = await switchTo(cookie, { org: second.slug });
      expect(switched.status).toBe(200);
      expect(switched.headers['cache-control']).toBe('no-store');
      expect(validate(SessionBodySchema, switched.body).ok).toBe(true);
      expect(switched.body.organization).toMatchObject({ id: second.id, slug: second.slug, role: 'owner' });
      expect(switched.body.organizations).toEqual(signedIn.body.organizations);
      // The new session ends when the old one would have: a switch does not lengthen it.
      expect(switched.body.expiresAt).toBe(before.expiresAt!.toISOString());

      const { pair, attributes } = setCookieOf(switched);
      expect(pair).not.toBe(cookie);
      expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'Path=/', 'SameSite=Lax']));
      const rows = await service.prisma.accessToken.findMany({ where: { userId: user.id }, orderBy: { createdAt: 'asc' } });
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({ id: before.id, orgId: service.account.orgId });
      expect(rows[0]!.revokedAt).not.toBeNull();
      expect(rows[1]).toMatchObject({ orgId: second.id, kind: 'browser', revokedAt: null, scopes: ['read', 'run'], tokenHash: hashToken(pair.slice('svc_session='.length)) });

      // The new cookie acts in the second organization; the old one no longer signs in.
      const session = await request(service.url).get('/auth/session').set('Cookie', pair);
      expect(session.status).toBe(200);
      expect(session.body).toEqual(switched.body);
      expect((await request(service.url).get('/auth/session').set('Cookie', cookie)).status).toBe(401);
      // And back again.
      const first = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
      const back = await switchTo(pair, { org: first.slug });
      expect(back.status).toBe(200);
      expect(back.body.organization.id).toBe(first.id);
    });

    it('refuses a switch to an organization the user is not a member of with 403, keeping the session', async () => {
      const { user, cookie } = await twoOrgUser();
      const stranger = await new OrganizationRepository(service.prisma).create({ slug: `elsewhere-${randomUUID().slice(0, 8)}`, name: 'Elsewhere' });
      for (const org of [stranger.slug, 'no-such-org']) {
        const refused = await switchTo(cookie, { org });
        expect(refused.status).toBe(403);
        expect(refused.body).toEqual({ code: 'forbidden', error: `you are not a member of an organization "${org}"` });
        expect(refused.headers['set-cookie']).toBeUndefined();
      }
      expect(await service.prisma.accessToken.count({ where: { userId: user.id, revokedAt: null } })).toBe(1);
      expect((await request(service.url).get('/auth/session').set('Cookie', cookie)).status).toBe(200);
    });

    it('refuses a switch posted from another site (403), without a session (401), with a bearer token only (401), and a malformed body (400)', async () => {
      const { user, second, cookie } = await twoOrgUser();
      const forged = await switchTo(cookie, { org: second.slug }, 'https://attacker.example');
      expect(forged.status).toBe(403);
      expect(forged.body.code).toBe('forbidden');
      expect(forged.headers['set-cookie']).toBeUndefined();
      // No Origin and no Referer on a cookie post: refused as well.
      const unmarked = await request(service.url).post('/auth/switch').set('Cookie', cookie).set('Content-Type', 'application/json').send({ org: second.slug });
      expect(unmarked.status).toBe(403);
      expect(await service.prisma.accessToken.count({ where: { userId: user.id, revokedAt: null, orgId: service.account.orgId } })).toBe(1);

      const anonymous = await switchTo(null, { org: second.slug });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error).toContain('not signed in');
      const withToken = await request(service.url).post('/auth/switch').set('Origin', origin).set(bearer(service.account.token)).send({ org: second.slug });
      expect(withToken.status).toBe(401);
      const expired = await createBrowserSession(service.prisma, { userId: user.id, orgId: service.account.orgId }, { expiresAt: new Date(Date.now() - 1000) });
      expect((await switchTo(expired.cookie, { org: second.slug })).status).toBe(401);

      const extra = await switchTo(cookie, { org: second.slug, remember: true });
      expect(extra.status).toBe(400);
      expect(extra.body.error).toContain('unknown field "remember"');
      expect((await switchTo(cookie, {})).status).toBe(400);
    });

    it('answers 401 on GET /auth/session once the user is no longer a member of the organization', async () => {
      const { user, cookie } = await twoOrgUser();
      await service.prisma.membership.delete({ where: { orgId_userId: { orgId: service.account.orgId, userId: user.id } } });
      const res = await request(service.url).get('/auth/session').set('Cookie', cookie);
      expect(res.status).toBe(401);
      expect(res.body.error).toContain('no longer a member');
    });
  });
});
