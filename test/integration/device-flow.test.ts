import { issueToken, type TokenKind } from '../../services/platform/access-token';
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
    const granted = await client.poll(code.device_code);
    expect(granted.status).toBe(200);
    expect(granted.headers.get('cache-control')).toBe('no-store');
    expect(granted.body).toEqual({ access_token: expect.stringMatching(/^svcs_/), token_type: 'Bearer', expires_in: 30 * 86400, scope: 'read run' });
    const token = granted.body.access_token as string;

    const row = await service.prisma.deviceAuthorization.findUniqueOrThrow({ where: { deviceCodeHash: hashDeviceCode(code.device_code) } });
    expect(row.status).toBe('consumed');
    const stored = await service.prisma.accessToken.findUniqueOrThrow({ where: { id: row.tokenId! } });
    expect(stored).toMatchObject({ kind: 'session', userId: service.account.userId, orgId: service.account.orgId, scopes: ['read', 'run'], revokedAt: null });
    expect(Math.abs(stored.expiresAt!.getTime() - (Date.now() + 30 * 86400_000))).toBeLessThan(60_000);

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

    // The session is revocable: refused on its very next request.
    expect(await new TokenRepository(service.prisma).revoke(stored.id)).toBe(true);
    const revoked = await call(service, 'GET', '/v1/me', bearer(token));
    expect(revoked.status).toBe(401);
    expect(revoked.body.error).toContain('revoked');
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
