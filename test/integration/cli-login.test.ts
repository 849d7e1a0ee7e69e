import fs from 'node:fs';
import { hashToken } from '../../services/platform/access-token';
import { createBrowserSession } from '../support/browser-session';
import { ensureCliBuilt } from '../support/cli-build';
import { FakeOAuthServer } from '../support/cli-oauth-fake';
import { CliHome, finished, stderrMatching } from '../support/cli-process';
import { bearer, startTestService, type TestService } from '../support/service';

/** `svc login` end to end: the device flow as a person goes through it, the config file, whoami and logout. */
describe('svc login, whoami and logout', () => {
  let service: TestService;
  let cookie: string;

  beforeAll(async () => {
    ensureCliBuilt();
    // The shortest interval the service allows: the CLI's polls follow it.
    service = await startTestService({ env: { DEVICE_POLL_INTERVAL_SECONDS: '1' } });
    cookie = (await createBrowserSession(service.prisma, service.account)).cookie;
  });

  afterAll(async () => {
    await service?.close();
  });

  /** The decision as the studio's approval page sends it for a signed-in person (device.approve, device.deny). */
  function decide(userCode: string, action: 'approve' | 'deny'): Promise<Response> {
    return fetch(`${service.url}/api/oauth/device/${action}`, {
      method: 'POST',
      headers: { Cookie: cookie, Origin: service.url, 'Sec-Fetch-Site': 'same-origin', 'Content-Type': 'application/json' },
      body: JSON.stringify({ user_code: userCode }),
    });
  }

  /** Starts `svc login --no-browser`; resolves with the page and code it shows, and its end. */
  async function startLogin(home: CliHome, args: string[] = []) {
    const child = home.spawn(['login', '--no-browser', ...args]);
    const done = finished(child);
    const [, page, userCode] = await stderrMatching(child, /^\s+(http\S+)\s*\n\s*\n\s+code: ([A-Z]{4}-[A-Z]{4})$/m);
    return { page: page!, userCode: userCode!, done };
  }

  interface Saved {
    url: string;
    token: string;
    refreshToken?: string;
    expiresAt?: string;
  }
  const savedLogin = (home: CliHome) => JSON.parse(fs.readFileSync(home.configFile, 'utf8')) as Saved;
  const meStatus = async (token: string) => (await fetch(`${service.url}/v1/me`, { headers: bearer(token) })).status;

  /** `svc login`, approved; resolves with what it saved. */
  async function signIn(home: CliHome, args: string[] = []) {
    const { userCode, done } = await startLogin(home, args);
    expect((await decide(userCode, 'approve')).status).toBe(200);
    const login = await done;
    expect(login.code).toBe(0);
    return { login, saved: savedLogin(home) };
  }

  /** The refresh grant as any OAuth client sends it. */
  async function refresh(refreshToken: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'svc-cli' }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** The saved session token expires, as an hour later: on the service, and, with `file`, in the saved login too. */
  async function expire(home: CliHome, options: { file: boolean }) {
    const saved = savedLogin(home);
    await service.prisma.accessToken.update({ where: { tokenHash: hashToken(saved.token) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    if (options.file) fs.writeFileSync(home.configFile, JSON.stringify({ ...saved, expiresAt: new Date(Date.now() - 1000).toISOString() }));
    return saved;
  }

  it('signs in through the approval page, saves the token 0600, whoami uses it, logout revokes and removes it', async () => {
    const home = new CliHome({ SERVICE_URL: service.url, XDG_CONFIG_HOME: '' });
    try {
      const { page, userCode, done } = await startLogin(home);
      expect(page).toBe(`${service.url}/device?user_code=${userCode}`);
      // The person opens the link (signed in already): the studio's page, which looks the CLI's request up; then approves it.
      const shown = await fetch(page, { headers: { Cookie: cookie, Accept: 'text/html' } });
      expect(shown.status).toBe(200);
      expect(await shown.text()).toContain('<div id="root">');
      const looked = await fetch(`${service.url}/api/oauth/device/lookup?user_code=${new URL(page).searchParams.get('user_code')!}`, { headers: { Cookie: cookie, Origin: service.url, 'Sec-Fetch-Site': 'same-origin' } });
      expect(await looked.json()).toMatchObject({ user_code: userCode, client_id: 'svc-cli' });
      expect((await decide(userCode, 'approve')).status).toBe(200);

      const login = await done;
      expect(login.code).toBe(0);
      expect(login.stdout).toContain(`Signed in to ${service.url} as`);
      expect(login.stdout).toContain(service.account.orgSlug);

      const file = `${home.dir}/.config/svc/config.json`;
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.statSync(`${home.dir}/.config/svc`).mode & 0o777).toBe(0o700);
      const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Saved;
      expect(saved.url).toBe(service.url);
      expect(saved.token).toMatch(/^svcs_/);
      // A short-lived session token, and the refresh token that renews it.
      expect(saved.refreshToken).toMatch(/^svcr_/);
      expect(Date.parse(saved.expiresAt!)).toBeLessThanOrEqual(Date.now() + 3600_000);

      const whoami = await home.run(['whoami']);
      expect(whoami.code).toBe(0);
      expect(whoami.stdout).toMatch(/^token\s+session "Device login \(svc-cli\)" svcs_\S+… \(from saved login\)$/m);
      expect(whoami.stdout).toMatch(/^scopes\s+read run$/m);
      // The saved login also names the URL: no SERVICE_URL needed.
      const json = await home.run(['whoami', '--json'], { env: { SERVICE_URL: '' } });
      expect(JSON.parse(json.stdout)).toMatchObject({ organization: { slug: service.account.orgSlug }, token: { kind: 'session', scopes: ['read', 'run'] } });

      const logout = await home.run(['logout']);
      expect(logout.code).toBe(0);
      expect(logout.stdout).toContain('the session token is revoked and removed');
      expect(fs.existsSync(file)).toBe(false);
      expect((await fetch(`${service.url}/v1/me`, { headers: bearer(saved.token) })).status).toBe(401);

      const again = await home.run(['logout']);
      expect(again).toMatchObject({ code: 0, stdout: 'Not signed in: there is no saved login.\n' });
      expect((await home.run(['whoami'])).code).toBe(3);
    } finally {
      home.remove();
    }
  });

  it('saves under $XDG_CONFIG_HOME, approved through the JSON route, and removes a token revoked elsewhere', async () => {
    const home = new CliHome({ SERVICE_URL: service.url });
    home.env.XDG_CONFIG_HOME = `${home.dir}/xdg`;
    try {
      const { userCode, done } = await startLogin(home, ['--json']);
      const approved = await fetch(`${service.url}/oauth/device/approve`, {
        method: 'POST',
        headers: { Cookie: cookie, Origin: service.url, 'Content-Type': 'application/json' },
        body: JSON.stringify({ user_code: userCode }),
      });
      expect(approved.status).toBe(200);
      const login = await done;
      expect(login.code).toBe(0);
      expect(JSON.parse(login.stdout)).toMatchObject({ url: service.url, configFile: home.configFile, organization: { slug: service.account.orgSlug } });
      const { token } = JSON.parse(fs.readFileSync(home.configFile, 'utf8')) as { token: string };

      // Revoked from another device: logout still removes it.
      const me = (await (await fetch(`${service.url}/v1/me`, { headers: bearer(token) })).json()) as { token: { id: string } };
      expect((await fetch(`${service.url}/v1/tokens/${me.token.id}`, { method: 'DELETE', headers: bearer(token) })).status).toBe(204);
      const logout = await home.run(['logout', '--json']);
      expect(logout.code).toBe(0);
      expect(JSON.parse(logout.stdout)).toEqual({ url: service.url, revoked: false, removed: true });
      expect(fs.existsSync(home.configFile)).toBe(false);
    } finally {
      home.remove();
    }
  });

  it('revokes the session token it replaces when signing in again to the same service', async () => {
    const home = new CliHome({ SERVICE_URL: service.url });
    try {
      const first = await signIn(home);
      expect(first.login.stdout).not.toContain('previous');
      const second = await signIn(home);
      expect(second.saved.token).not.toBe(first.saved.token);
      expect(second.login.stdout.trim().split('\n').at(-1)).toBe('The previous session token is revoked.');
      expect(await meStatus(first.saved.token)).toBe(401);
      expect(await meStatus(second.saved.token)).toBe(200);
      // The replaced login's refresh token went with it.
      expect((await refresh(first.saved.refreshToken!)).body).toMatchObject({ error: 'invalid_grant' });

      // A replaced login whose session token expired is renewed to be revoked.
      await expire(home, { file: true });
      const third = await signIn(home, ['--json']);
      expect(JSON.parse(third.login.stdout)).toMatchObject({ url: service.url, previousTokenRevoked: true });
      expect((await refresh(second.saved.refreshToken!)).body).toMatchObject({ error: 'invalid_grant' });
      expect(await meStatus(third.saved.token)).toBe(200);
    } finally {
      home.remove();
    }
  });

  describe('renewing the saved login', () => {
    it('renews a session token the service refuses as expired, retries the request, and says nothing about it', async () => {
      const home = new CliHome({ SERVICE_URL: service.url });
      try {
        await signIn(home);
        const before = await expire(home, { file: false });
        const whoami = await home.run(['whoami']);
        expect(whoami).toMatchObject({ code: 0, stderr: '' });
        expect(whoami.stdout).toMatch(/^token\s+session "Device login \(svc-cli\)" svcs_\S+… \(from saved login\)$/m);
        const after = savedLogin(home);
        expect(after.token).not.toBe(before.token);
        expect(after.refreshToken).not.toBe(before.refreshToken);
        expect(fs.statSync(home.configFile).mode & 0o777).toBe(0o600);
        expect(await meStatus(after.token)).toBe(200);

        // Signing out ends the renewed login, the refresh token included.
        expect((await home.run(['logout'])).stdout).toContain('the session token is revoked and removed');
        expect((await refresh(after.refreshToken!)).body).toMatchObject({ error: 'invalid_grant' });
      } finally {
        home.remove();
      }
    });

    it('renews a session token before it expires, by the saved expiry, and says nothing about it', async () => {
      const home = new CliHome({ SERVICE_URL: service.url });
      try {
        await signIn(home);
        const before = await expire(home, { file: true });
        const whoami = await home.run(['whoami', '--json']);
        expect(whoami).toMatchObject({ code: 0, stderr: '' });
        const after = savedLogin(home);
        expect(after.token).not.toBe(before.token);
        expect(JSON.parse(whoami.stdout)).toMatchObject({ token: { kind: 'session', displayPrefix: after.token.slice(0, 13) } });
        expect(Date.parse(after.expiresAt!)).toBeGreaterThan(Date.now());
      } finally {
        home.remove();
      }
    });

    it('stays signed in when several svc processes renew at once: one renews, the others take its tokens', async () => {
      const home = new CliHome({ SERVICE_URL: service.url });
      try {
        await signIn(home);
        const before = await expire(home, { file: true });
        const runs = await Promise.all(Array.from({ length: 4 }, () => home.run(['whoami'])));
        expect(runs.map((r) => [r.code, r.stderr])).toEqual(Array(4).fill([0, '']));
        const after = savedLogin(home);
        expect(after.token).not.toBe(before.token);
        // No refresh token was presented twice: the login was not revoked, and renews again.
        expect(await meStatus(after.token)).toBe(200);
        await expire(home, { file: true });
        expect(await home.run(['whoami'])).toMatchObject({ code: 0, stderr: '' });
      } finally {
        home.remove();
      }
    });

    it('says to sign in again, and exits 3, when the login can no longer be renewed', async () => {
      const home = new CliHome({ SERVICE_URL: service.url });
      try {
        const { saved } = await signIn(home);
        // The refresh token is used elsewhere (it leaked): when svc presents it too, the service revokes the login.
        expect((await refresh(saved.refreshToken!)).status).toBe(200);
        await expire(home, { file: true });
        const whoami = await home.run(['whoami']);
        expect(whoami.code).toBe(3);
        expect(whoami.stdout).toBe('');
        expect(whoami.stderr).toMatch(/^svc: renewing the saved login for \S+ failed: .*run `svc login` again \(invalid_grant\)\n$/);
        const json = await home.run(['whoami', '--json']);
        expect(json.code).toBe(3);
        expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'invalid_grant', message: expect.stringContaining('svc login') } });
      } finally {
        home.remove();
      }
    });
  });

  it('exits 3 with a clear message when the person denies, and saves nothing', async () => {
    const home = new CliHome({ SERVICE_URL: service.url });
    try {
      const { userCode, done } = await startLogin(home);
      expect((await decide(userCode, 'deny')).status).toBe(200);
      const login = await done;
      expect(login.code).toBe(3);
      expect(login.stderr).toContain('the sign-in was denied in the browser; nothing was saved (access_denied)');
      expect(fs.existsSync(home.configFile)).toBe(false);
    } finally {
      home.remove();
    }
  });

  it('exits 5 when the service cannot be reached', async () => {
    const home = new CliHome();
    try {
      const login = await home.run(['login', '--no-browser', '--url', 'http://127.0.0.1:9']);
      expect(login.code).toBe(5);
      expect(login.stderr).toContain('could not reach the service at http://127.0.0.1:9');
    } finally {
      home.remove();
    }
  });

  /**
   * What the service cannot be made to answer on demand (slow_down; expired_token within seconds),
   * from a fake of its OAuth endpoints answering `interval: 1`: the polls' gaps show the wait.
   */
  describe('against a fake OAuth server', () => {
    let fake: FakeOAuthServer | undefined;
    afterEach(async () => {
      await fake?.close();
      fake = undefined;
    });

    // That the 5 s stay for all later polls is test/unit/cli-device-login.test.ts's, in no time.
    it('waits 5 s more after slow_down, then saves the token', async () => {
      fake = await new FakeOAuthServer([{ error: 'authorization_pending' }, { error: 'slow_down' }, { token: 'svcs_from_the_fake' }]).start();
      const home = new CliHome({ SERVICE_URL: fake.url });
      try {
        const login = await home.run(['login', '--no-browser']);
        expect(login.code).toBe(0);
        expect(login.stdout).toContain(`Signed in to ${fake.url} as Ada Fake <ada@example.test> in Fake Org (fake-org).`);
        expect((JSON.parse(fs.readFileSync(home.configFile, 'utf8')) as { token: string }).token).toBe('svcs_from_the_fake');
        expect(fake.polls.map((p) => p.contentType)).toEqual(Array(3).fill('application/x-www-form-urlencoded'));
        expect(fake.polls[0]!.params).toEqual({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'fake-device-code', client_id: 'svc-cli' });
        // At least 1 s, 1 s, then 6 s after the slow_down; a loaded machine only adds, so no upper bound.
        const gaps = fake.gapsS();
        expect(gaps).toHaveLength(3);
        for (const [i, expected] of [1, 1, 6].entries()) expect(gaps[i]).toBeGreaterThanOrEqual(expected - 0.05);
      } finally {
        home.remove();
      }
    });

    it('exits 3 at expired_token, says to log in again, and saves nothing', async () => {
      fake = await new FakeOAuthServer([{ error: 'authorization_pending' }, { error: 'expired_token' }]).start();
      const home = new CliHome({ SERVICE_URL: fake.url });
      try {
        const login = await home.run(['login', '--no-browser']);
        expect(login.code).toBe(3);
        expect(login.stderr).toContain('svc: the code expired before it was approved: run `svc login` again (expired_token)');
        expect(login.stdout).toBe('');
        expect(fake.polls).toHaveLength(2);
        expect(fs.existsSync(home.configFile)).toBe(false);
      } finally {
        home.remove();
      }
    });
  });
});
