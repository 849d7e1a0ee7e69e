import { hashToken, issueToken, type TokenKind } from '../../services/platform/access-token';
import { hashDeviceCode, issueDeviceCodes } from '../../services/platform/device-code';
import { DeviceAuthorizationRepository, TokenRepository, type PrismaClient } from '../../services/store';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** A device-flow client as an RFC 8628 client speaks it: form-encoded posts, RFC 6749 answers. */
class DeviceClient {
  constructor(private readonly base: string, private readonly clientId = 'svc-cli') {}

  async post(path: string, params: Record<string, string>, options: { json?: boolean } = {}): Promise<Answer> {
    const res = await fetch(`${this.base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': options.json ? 'application/json' : 'application/x-www-form-urlencoded' },
      body: options.json ? JSON.stringify(params) : new URLSearchParams(params).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
  }

  async requestCode(extra: Record<string, string> = {}): Promise<DeviceCode> {
    const answer = await this.post('/oauth/device/code', { client_id: this.clientId, ...extra });
    expect(answer.status).toBe(200);
    return answer.body as unknown as DeviceCode;
  }

  poll(deviceCode: string): Promise<Answer> {
    return this.post('/oauth/token', { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: this.clientId });
  }

  refresh(refreshToken: string, clientId = this.clientId): Promise<Answer> {
    return this.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
  }
}

/** A device login's grant (its refresh-token family), read with SQL (the columns as stored). */
interface GrantRow {
  id: string;
  client_id: string | null;
  device_client_id: string | null;
  refresh_token_hash: string;
  refresh_expires_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

async function grantOfToken(prisma: PrismaClient, accessToken: string): Promise<GrantRow> {
  const rows = await prisma.$queryRawUnsafe<GrantRow[]>(
    `SELECT g.id, g.client_id, g.device_client_id, g.refresh_token_hash, g.refresh_expires_at, g.expires_at, g.revoked_at
       FROM oauth_grants g JOIN access_tokens t ON t.oauth_grant_id = g.id WHERE t.token_hash = $1`,
    hashToken(accessToken),
  );
  if (!rows[0]) throw new Error('the token has no grant');
  return rows[0];
}

/** A credential of another kind for the same user (a device-login session, the editor's browser session). */
async function seedToken(prisma: PrismaClient, account: SeededAccount, kind: TokenKind, scopes = ['read', 'run']): Promise<string> {
  const issued = issueToken(kind);
  await prisma.accessToken.create({
    data: { userId: account.userId, orgId: account.orgId, name: `test ${kind}`, kind, displayPrefix: issued.displayPrefix, tokenHash: issued.hash, scopes },
  });
  return issued.value;
}

async function call(service: TestService, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const res = await fetch(`${service.url}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: res.headers };
}

/** Moves the code's last poll into the past, as if the client had waited `seconds`. */
async function lastPolled(prisma: PrismaClient, deviceCode: string, secondsAgo: number): Promise<void> {
  await prisma.deviceAuthorization.update({ where: { deviceCodeHash: hashDeviceCode(deviceCode) }, data: { lastPolledAt: new Date(Date.now() - secondsAgo * 1000) } });
}

describe('device login (RFC 8628) over HTTP', () => {
  let service: TestService;
  let client: DeviceClient;
  /** The approving person's device-login session (any of their sessions may approve). */
  let approver: Record<string, string>;

  beforeAll(async () => {
    service = await startTestService();
    client = new DeviceClient(service.url);
    approver = bearer(await seedToken(service.prisma, service.account, 'session'));
  });
  afterAll(async () => {
    await service?.close();
  });

  const approve = (userCode: string, headers = approver, extra: Record<string, unknown> = {}) =>
    call(service, 'POST', '/oauth/device/approve', headers, { user_code: userCode, ...extra });

  it('issues a device code and an XXXX-XXXX user code, and stores only their hashes', async () => {
    const answer = await client.post('/oauth/device/code', { client_id: 'svc-cli' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const code = answer.body as unknown as DeviceCode;
    expect(code.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(code.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(code.verification_uri).toBe(`${service.url}/device`);
    expect(code.verification_uri_complete).toBe(`${service.url}/device?user_code=${code.user_code}`);
    expect(code.expires_in).toBe(900);
    expect(code.interval).toBe(5);
    const row = await service.prisma.deviceAuthorization.findUniqueOrThrow({ where: { deviceCodeHash: hashDeviceCode(code.device_code) } });
    expect(row).toMatchObject({ clientId: 'svc-cli', scopes: ['read', 'run'], status: 'pending', intervalSeconds: 5 });
    expect(JSON.stringify(row)).not.toContain(code.device_code);
    expect(JSON.stringify(row)).not.toContain(code.user_code.replace('-', ''));
  });

  it('drives the whole flow: pending, slow_down, approval, one token that works until it is revoked, no reuse', async () => {
    const code = await client.requestCode();

    const pending = await client.poll(code.device_code);
    expect(pending.status).toBe(400);
    expect(pending.body).toEqual({ error: 'authorization_pending', error_description: expect.any(String) });
    expect(pending.headers.get('cache-control')).toBe('no-store');

    // Polling again at once is too fast: slow_down, and 5 s more from then on.
    const tooFast = await client.poll(code.device_code);
    expect(tooFast.status).toBe(400);
    expect(tooFast.body).toMatchObject({ error: 'slow_down', interval: 10 });
    // 7 s later is past the first interval but not the raised one: still too fast.
    await lastPolled(service.prisma, code.device_code, 7);
    expect((await client.poll(code.device_code)).body).toMatchObject({ error: 'slow_down', interval: 15 });
    await lastPolled(service.prisma, code.device_code, 16);
    expect((await client.poll(code.device_code)).body).toMatchObject({ error: 'authorization_pending' });

    // The approving person looks the code up (as typed: lower case, no dash) and approves it.
    const typed = code.user_code.replace('-', '').toLowerCase();
    const lookup = await call(service, 'GET', `/oauth/device/lookup?user_code=${typed}`, approver);
    expect(lookup.status).toBe(200);
    expect(lookup.body).toEqual({ user_code: code.user_code, client_id: 'svc-cli', scopes: ['read', 'run'], expires_at: expect.any(String) });
    const approved = await approve(typed);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: 'approved', user_code: code.user_code, organization: { id: service.account.orgId } });

    await lastPolled(service.prisma, code.device_code, 16);
    const before = Date.now();
    const granted = await client.poll(code.device_code);
    const after = Date.now();
    expect(granted.status).toBe(200);
    expect(granted.headers.get('cache-control')).toBe('no-store');
    // A short-lived session token (SESSION_TOKEN_TTL_SECONDS, an hour) and a refresh token that renews it.
    expect(granted.body).toEqual({ access_token: expect.stringMatching(/^svcs_/), token_type: 'Bearer', expires_in: 3600, scope: 'read run', refresh_token: expect.stringMatching(/^svcr_/) });
    const token = granted.body.access_token as string;

    const row = await service.prisma.deviceAuthorization.findUniqueOrThrow({ where: { deviceCodeHash: hashDeviceCode(code.device_code) } });
    expect(row.status).toBe('consumed');
    const stored = await service.prisma.accessToken.findUniqueOrThrow({ where: { id: row.tokenId! } });
    expect(stored).toMatchObject({ kind: 'session', userId: service.account.userId, orgId: service.account.orgId, scopes: ['read', 'run'], revokedAt: null });
    const within = (at: Date | null, ms: number) => expect([at!.getTime() >= before + ms - 1, at!.getTime() <= after + ms]).toEqual([true, true]);
    within(stored.expiresAt, 3600_000);
    // The refresh token's family: a grant of the device flow's client, only the hash stored,
    // renewable for 30 days after each use (SESSION_REFRESH_TOKEN_TTL_DAYS), for 90 at most (SESSION_MAX_AGE_DAYS).
    const grant = await grantOfToken(service.prisma, token);
    expect(grant).toMatchObject({ client_id: null, device_client_id: 'svc-cli', refresh_token_hash: hashToken(granted.body.refresh_token as string), revoked_at: null });
    within(grant.refresh_expires_at, 30 * 86400_000);
    within(grant.expires_at, 90 * 86400_000);

    const me = await call(service, 'GET', '/v1/me', bearer(token));
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      user: { id: service.account.userId },
      organization: { id: service.account.orgId },
      token: { id: stored.id, kind: 'session', scopes: ['read', 'run'], expiresAt: stored.expiresAt!.toISOString() },
    });

    const run = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } }, { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } }] } }),
    });
    expect(run.status).toBe(200);
    const stream = await run.text();
    expect(stream).toContain('"run.completed"');
    expect(stream).toContain('data: [DONE]');

    // A device code is single use.
    await lastPolled(service.prisma, code.device_code, 60);
    const again = await client.poll(code.device_code);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('already') });

    // The session is revocable: refused on its very next request, and its refresh token with it.
    expect(await new TokenRepository(service.prisma).revoke(stored.id)).toBe(true);
    const revoked = await call(service, 'GET', '/v1/me', bearer(token));
    expect(revoked.status).toBe(401);
    expect(revoked.body.error).toContain('revoked');
    expect((await client.refresh(granted.body.refresh_token as string)).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('revoked') });
  });

  describe('renewing a device login (grant_type=refresh_token)', () => {
    /** A device login through to its tokens. */
    async function signIn(): Promise<{ access: string; refresh: string }> {
      const code = await client.requestCode();
      expect((await approve(code.user_code)).status).toBe(200);
      const granted = await client.poll(code.device_code);
      expect(granted.status).toBe(200);
      return { access: granted.body.access_token as string, refresh: granted.body.refresh_token as string };
    }
    const meStatus = async (token: string) => (await call(service, 'GET', '/v1/me', bearer(token))).status;

    it('rotates: each refresh answers a new session token and a new refresh token of the same login', async () => {
      const first = await signIn();
      const renewed = await client.refresh(first.refresh);
      expect(renewed.status).toBe(200);
      expect(renewed.headers.get('cache-control')).toBe('no-store');
      expect(renewed.body).toEqual({ access_token: expect.stringMatching(/^svcs_/), token_type: 'Bearer', expires_in: 3600, scope: 'read run', refresh_token: expect.stringMatching(/^svcr_/) });
      const second = { access: renewed.body.access_token as string, refresh: renewed.body.refresh_token as string };
      expect([second.access === first.access, second.refresh === first.refresh]).toEqual([false, false]);
      const me = await call(service, 'GET', '/v1/me', bearer(second.access));
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ user: { id: service.account.userId }, token: { kind: 'session', name: 'Device login (svc-cli)', scopes: ['read', 'run'] } });
      // One family: the grant now holds the new refresh token (its hash), and renews again.
      const grant = await grantOfToken(service.prisma, second.access);
      expect(grant.id).toBe((await grantOfToken(service.prisma, first.access)).id);
      expect(grant.refresh_token_hash).toBe(hashToken(second.refresh));
      const third = await client.refresh(second.refresh);
      expect(third.status).toBe(200);
      expect(await meStatus(third.body.access_token as string)).toBe(200);
    });

    it('revokes the whole login when a rotated refresh token comes again: every session token of it stops working', async () => {
      const first = await signIn();
      const renewed = await client.refresh(first.refresh);
      const second = { access: renewed.body.access_token as string, refresh: renewed.body.refresh_token as string };
      expect([await meStatus(first.access), await meStatus(second.access)]).toEqual([200, 200]);

      const replay = await client.refresh(first.refresh);
      expect(replay.status).toBe(400);
      expect(replay.body).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('already used') });
      expect([await meStatus(first.access), await meStatus(second.access)]).toEqual([401, 401]);
      // The current refresh token went with them.
      expect((await client.refresh(second.refresh)).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('revoked') });
      expect((await grantOfToken(service.prisma, second.access)).revoked_at).not.toBeNull();
    });

    it('answers 401 for an expired session token, which the refresh token renews', async () => {
      const login = await signIn();
      await service.prisma.accessToken.update({ where: { tokenHash: hashToken(login.access) }, data: { expiresAt: new Date(Date.now() - 1000) } });
      const expired = await call(service, 'GET', '/v1/me', bearer(login.access));
      expect(expired.status).toBe(401);
      expect(expired.body.error).toContain('expired');
      const renewed = await client.refresh(login.refresh);
      expect(renewed.status).toBe(200);
      expect(await meStatus(renewed.body.access_token as string)).toBe(200);
    });

    it('refuses a refresh token unused past its lifetime, and never renews past the login\'s maximum age', async () => {
      const idle = await signIn();
      const grant = await grantOfToken(service.prisma, idle.access);
      await service.prisma.$executeRawUnsafe(`UPDATE oauth_grants SET refresh_expires_at = now() - interval '1 second' WHERE id = $1::uuid`, grant.id);
      expect((await client.refresh(idle.refresh)).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });

      const old = await signIn();
      const end = new Date(Date.now() + 3600_000);
      await service.prisma.$executeRawUnsafe(`UPDATE oauth_grants SET expires_at = $2::timestamptz WHERE id = $1::uuid`, (await grantOfToken(service.prisma, old.access)).id, end);
      const renewed = await client.refresh(old.refresh);
      expect(renewed.status).toBe(200);
      // The new refresh token ends with the login, not 30 days on.
      expect((await grantOfToken(service.prisma, renewed.body.access_token as string)).refresh_expires_at.getTime()).toBe(end.getTime());
    });

    it('takes a refresh token only from its own client, and says what is wrong with a malformed request', async () => {
      const login = await signIn();
      expect((await client.refresh(login.refresh, 'other-cli')).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('not known') });
      expect((await client.refresh(login.access)).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('svcr_') });
      expect((await client.post('/oauth/token', { grant_type: 'refresh_token', client_id: 'svc-cli' })).body).toMatchObject({ error: 'invalid_request', error_description: expect.stringContaining('refresh_token') });
      // None of these cost the login anything.
      expect((await client.refresh(login.refresh)).status).toBe(200);
    });

    it('ends the login when one of its session tokens is revoked (svc logout): the refresh token is refused', async () => {
      const first = await signIn();
      const renewed = await client.refresh(first.refresh);
      const access = renewed.body.access_token as string;
      const me = (await call(service, 'GET', '/v1/me', bearer(access))).body as { token: { id: string } };
      expect((await call(service, 'DELETE', `/v1/tokens/${me.token.id}`, bearer(access))).status).toBe(204);
      expect([await meStatus(first.access), await meStatus(access)]).toEqual([401, 401]);
      expect((await client.refresh(renewed.body.refresh_token as string)).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('revoked') });
    });
  });

  it('gives the token to exactly one of several concurrent polls', async () => {
    const code = await client.requestCode();
    expect((await approve(code.user_code)).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.poll(code.device_code)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 400).map((a) => a.body.error)).toEqual(Array(5).fill('invalid_grant'));
    expect(await service.prisma.accessToken.count({ where: { deviceAuthorization: { deviceCodeHash: hashDeviceCode(code.device_code) } } })).toBe(1);
  });

  it('answers access_denied once the person denies, and a decided code cannot be decided again', async () => {
    const code = await client.requestCode();
    const denied = await call(service, 'POST', '/oauth/device/deny', approver, { user_code: code.user_code });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ status: 'denied', client_id: 'svc-cli' });
    expect((await client.poll(code.device_code)).body).toMatchObject({ error: 'access_denied' });
    const late = await approve(code.user_code);
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'conflict', error: expect.stringContaining('already denied') });
    expect((await call(service, 'GET', `/oauth/device/lookup?user_code=${code.user_code}`, approver)).status).toBe(409);
  });

  it('answers expired_token once the code expired, and refuses to look it up or approve it (410)', async () => {
    const code = await client.requestCode();
    await service.prisma.deviceAuthorization.update({ where: { deviceCodeHash: hashDeviceCode(code.device_code) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const polled = await client.poll(code.device_code);
    expect(polled.status).toBe(400);
    expect(polled.body).toMatchObject({ error: 'expired_token' });
    expect((await call(service, 'GET', `/oauth/device/lookup?user_code=${code.user_code}`, approver)).status).toBe(410);
    const late = await approve(code.user_code);
    expect(late.status).toBe(410);
    expect(late.body).toMatchObject({ code: 'gone', error: expect.stringContaining('expired') });
  });

  it('refuses an approved code that expired before it was redeemed', async () => {
    const code = await client.requestCode();
    expect((await approve(code.user_code)).status).toBe(200);
    await service.prisma.deviceAuthorization.update({ where: { deviceCodeHash: hashDeviceCode(code.device_code) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await client.poll(code.device_code)).body).toMatchObject({ error: 'expired_token' });
  });

  it('issues a session of the requested scopes only: scope=read cannot start runs', async () => {
    const code = await client.requestCode({ scope: 'read' });
    const lookup = await call(service, 'GET', `/oauth/device/lookup?user_code=${code.user_code}`, approver);
    expect(lookup.body.scopes).toEqual(['read']);
    await approve(code.user_code);
    const granted = await client.poll(code.device_code);
    expect(granted.body).toMatchObject({ scope: 'read' });
    const run = await call(service, 'POST', '/v1/runs', bearer(granted.body.access_token as string), { workflow: { version: 2, nodes: [] } });
    expect(run.status).toBe(403);
  });

  it('approves for another organization of the person with "org", and refuses one they are not a member of', async () => {
    const other = await service.prisma.organization.create({ data: { slug: `second-${Date.now()}`, name: 'Second' } });
    await service.prisma.membership.create({ data: { orgId: other.id, userId: service.account.userId, role: 'member' } });
    const stranger = await seedAccount(service.prisma, { slug: 'stranger', scopes: ['read'] });
    const strangerOrg = await service.prisma.organization.findUniqueOrThrow({ where: { id: stranger.orgId } });

    const code = await client.requestCode();
    const refused = await approve(code.user_code, approver, { org: strangerOrg.slug });
    expect(refused.status).toBe(404);
    expect(refused.body.error).toContain('not a member');
    const approved = await approve(code.user_code, approver, { org: other.slug });
    expect(approved.status).toBe(200);
    const granted = await client.poll(code.device_code);
    const me = await call(service, 'GET', '/v1/me', bearer(granted.body.access_token as string));
    expect(me.body).toMatchObject({ organization: { id: other.id, slug: other.slug, name: 'Second' } });
  });

  it('lets the web editor approve with its session cookie, and refuses personal tokens and narrower credentials', async () => {
    const browser = await seedToken(service.prisma, service.account, 'browser');
    const code = await client.requestCode();
    // A personal access token may not approve (it must not be able to mint credentials).
    const personal = await approve(code.user_code, bearer(service.account.token));
    expect(personal.status).toBe(403);
    // A read-only session cannot approve a request for "run".
    const readOnly = bearer(await seedToken(service.prisma, service.account, 'session', ['read']));
    const narrow = await approve(code.user_code, readOnly);
    expect(narrow.status).toBe(403);
    expect(narrow.body).toMatchObject({ code: 'insufficient_scope' });

    const cookie = { Cookie: `svc_session=${browser}` };
    expect((await call(service, 'GET', `/oauth/device/lookup?user_code=${code.user_code}`, cookie)).status).toBe(200);
    // A cross-site page cannot approve with the cookie.
    expect((await approve(code.user_code, { ...cookie, Origin: 'https://evil.example' })).status).toBe(403);
    expect((await approve(code.user_code, { ...cookie, Origin: new URL(service.url).origin })).status).toBe(200);
    expect((await client.poll(code.device_code)).status).toBe(200);
  });

  it('accepts JSON bodies and the /api prefix', async () => {
    const api = new DeviceClient(`${service.url}/api`, 'my-tool');
    const answer = await api.post('/oauth/device/code', { client_id: 'my-tool', scope: 'run read' }, { json: true });
    expect(answer.status).toBe(200);
    const code = answer.body as unknown as DeviceCode;
    await approve(code.user_code);
    const granted = await api.post('/oauth/token', { grant_type: DEVICE_GRANT, device_code: code.device_code, client_id: 'my-tool' }, { json: true });
    expect(granted.status).toBe(200);
    expect(granted.body.scope).toBe('read run');
  });

  it('answers malformed requests with RFC 6749 errors that say what to fix', async () => {
    const code = await client.requestCode();
    const cases: [Record<string, string>, string, string][] = [
      [{ grant_type: 'password', client_id: 'svc-cli', device_code: code.device_code }, 'unsupported_grant_type', DEVICE_GRANT],
      [{ client_id: 'svc-cli', device_code: code.device_code }, 'invalid_request', 'grant_type'],
      [{ grant_type: DEVICE_GRANT, client_id: 'svc-cli' }, 'invalid_request', 'device_code'],
      [{ grant_type: DEVICE_GRANT, device_code: code.device_code }, 'invalid_request', 'client_id'],
      [{ grant_type: DEVICE_GRANT, client_id: 'svc-cli', device_code: 'nope' }, 'invalid_grant', 'not known'],
      [{ grant_type: DEVICE_GRANT, client_id: 'other-cli', device_code: code.device_code }, 'invalid_grant', 'another client_id'],
    ];
    for (const [params, error, hint] of cases) {
      const answer = await client.post('/oauth/token', params);
      expect([answer.status, answer.body.error]).toEqual([400, error]);
      expect(answer.body.error_description).toContain(hint);
    }
    const twice = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `grant_type=${encodeURIComponent(DEVICE_GRANT)}&client_id=a&client_id=b&device_code=x`,
    });
    expect([twice.status, ((await twice.json()) as { error: string }).error]).toEqual([400, 'invalid_request']);
    expect((await client.post('/oauth/device/code', {})).body).toMatchObject({ error: 'invalid_request', error_description: expect.stringContaining('client_id') });
    expect((await client.post('/oauth/device/code', { client_id: 'svc-cli', scope: 'read admin' })).body).toMatchObject({
      error: 'invalid_scope',
      error_description: expect.stringContaining('"admin"'),
    });
    expect((await client.post('/oauth/device/code', { client_id: 'x'.repeat(65) })).body).toMatchObject({ error: 'invalid_request' });
    const badJson = await fetch(`${service.url}/oauth/token`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"grant_type":' });
    expect([badJson.status, ((await badJson.json()) as { error: string }).error]).toEqual([400, 'invalid_request']);
    const huge = await client.post('/oauth/token', { grant_type: DEVICE_GRANT, client_id: 'svc-cli', device_code: 'x'.repeat(20_000) });
    expect([huge.status, huge.body.error]).toEqual([413, 'invalid_request']);
    const get = await fetch(`${service.url}/oauth/token`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('refuses malformed user codes with 400 and unknown ones with 404', async () => {
    expect((await call(service, 'GET', '/oauth/device/lookup?user_code=AAAA-0000', approver)).status).toBe(400);
    expect((await call(service, 'GET', '/oauth/device/lookup', approver)).status).toBe(400);
    expect((await approve('BCDF-GHJK', approver, { extra: 1 })).status).toBe(400);
    expect((await call(service, 'GET', '/oauth/device/lookup?user_code=BCDF-GHJK', {})).status).toBe(401);
    const unknown = await call(service, 'GET', '/oauth/device/lookup?user_code=ZZZZ-ZZZZ', approver);
    expect(unknown.status).toBe(404);
  });

  it('answers GET /v1/me for a personal access token', async () => {
    const me = await call(service, 'GET', '/v1/me', bearer(service.account.token));
    expect(me.status).toBe(200);
    const user = await service.prisma.user.findUniqueOrThrow({ where: { id: service.account.userId } });
    const org = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
    expect(me.body).toEqual({
      user: { id: user.id, email: user.email, name: user.name },
      organization: { id: org.id, slug: org.slug, name: org.name },
      token: { id: service.account.tokenId, kind: 'personal', name: 'test token', displayPrefix: expect.stringMatching(/^svc_/), scopes: ['read', 'run'], expiresAt: null },
    });
    expect((await call(service, 'GET', '/v1/me', {})).status).toBe(401);
  });
});

describe('brute-force limits on device-login user codes', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { DEVICE_USER_CODE_MAX_FAILURES_PER_IP: '15' } });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('refuses a user after 10 wrong codes, and an address after 15, with 429 and Retry-After', async () => {
    const client = new DeviceClient(service.url);
    const first = bearer(await seedToken(service.prisma, service.account, 'session'));
    const code = await client.requestCode();
    const wrong = code.user_code === 'BBBB-BBBB' ? 'CCCC-CCCC' : 'BBBB-BBBB';
    for (let i = 0; i < 10; i++) {
      const path = i % 2 === 0 ? `/oauth/device/lookup?user_code=${wrong}` : '/oauth/device/approve';
      const answer = await call(service, i % 2 === 0 ? 'GET' : 'POST', path, first, i % 2 === 0 ? undefined : { user_code: wrong });
      expect(answer.status).toBe(404);
    }
    // The 11th is refused before the code is looked at: even the right one.
    const limited = await call(service, 'POST', '/oauth/device/approve', first, { user_code: code.user_code });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'rate_limited', error: expect.stringContaining('your account') });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(800);
    expect((await call(service, 'GET', `/oauth/device/lookup?user_code=${wrong}`, first)).status).toBe(429);

    // Another user from the same address: 5 more failures use up the address's 15.
    const other = await seedAccount(service.prisma, { slug: 'other', scopes: ['read', 'run'] });
    const second = bearer(await seedToken(service.prisma, other, 'session'));
    for (let i = 0; i < 5; i++) expect((await call(service, 'GET', `/oauth/device/lookup?user_code=${wrong}`, second)).status).toBe(404);
    const byAddress = await call(service, 'GET', `/oauth/device/lookup?user_code=${code.user_code}`, second);
    expect(byAddress.status).toBe(429);
    expect(byAddress.body.error).toContain('this address');
    expect(byAddress.headers.get('retry-after')).toMatch(/^\d+$/);

    // The client's side is unaffected: the code is still pending.
    expect((await client.poll(code.device_code)).body).toMatchObject({ error: 'authorization_pending' });
  });
});

describe('the device authorization repository', () => {
  let service: TestService;
  let repo: DeviceAuthorizationRepository;
  const now = new Date();
  const later = (seconds: number) => new Date(now.getTime() + seconds * 1000);
  const fresh = (userCodeHash: string, expiresAt: Date) => ({
    deviceCodeHash: issueDeviceCodes().deviceCodeHash,
    userCodeHash,
    clientId: 'svc-cli',
    scopes: ['read'],
    intervalSeconds: 5,
    expiresAt,
    now,
  });

  beforeAll(async () => {
    service = await startTestService();
    repo = new DeviceAuthorizationRepository(service.prisma);
  });
  afterAll(async () => {
    await service?.close();
  });

  it('draws again on a user code held by a live authorization, and replaces one held by an expired one', async () => {
    const { userCodeHash } = issueDeviceCodes();
    const expired = await repo.create(fresh(userCodeHash, later(-10)));
    expect(expired).not.toBeNull();
    const replacing = await repo.create(fresh(userCodeHash, later(900)));
    expect(replacing).toMatchObject({ status: 'pending', clientId: 'svc-cli' });
    expect(replacing!.id).not.toBe(expired!.id);
    expect(await repo.create(fresh(userCodeHash, later(900)))).toBeNull();
    expect((await repo.findByUserCodeHash(userCodeHash))!.id).toBe(replacing!.id);
  });

  it('decides a code once, and says why it refuses', async () => {
    const { userCodeHash } = issueDeviceCodes();
    await repo.create(fresh(userCodeHash, later(900)));
    const decision = { status: 'denied' as const, userId: service.account.userId, now };
    const [a, b] = await Promise.all([repo.decide(userCodeHash, decision), repo.decide(userCodeHash, decision)]);
    expect([a.ok, b.ok].sort()).toEqual([false, true]);
    expect((a.ok ? b : a) as { reason: string }).toMatchObject({ reason: 'decided' });
    expect(await repo.decide(issueDeviceCodes().userCodeHash, decision)).toMatchObject({ ok: false, reason: 'unknown' });
    const { userCodeHash: stale } = issueDeviceCodes();
    await repo.create(fresh(stale, later(-1)));
    expect(await repo.decide(stale, decision)).toMatchObject({ ok: false, reason: 'expired' });
  });

  it('deletes authorizations expired before the cutoff, and only those', async () => {
    const old = issueDeviceCodes().userCodeHash;
    const recent = issueDeviceCodes().userCodeHash;
    await repo.create(fresh(old, new Date(now.getTime() - 2 * 86400_000)));
    await repo.create(fresh(recent, later(-60)));
    expect(await repo.deleteExpired(new Date(now.getTime() - 86400_000))).toBeGreaterThanOrEqual(1);
    expect(await repo.findByUserCodeHash(old)).toBeNull();
    expect(await repo.findByUserCodeHash(recent)).not.toBeNull();
  });
});
