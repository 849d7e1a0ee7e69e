import fs from 'node:fs';
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
      const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { url: string; token: string };
      expect(saved.url).toBe(service.url);
      expect(saved.token).toMatch(/^svcs_/);

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
    const savedToken = () => (JSON.parse(fs.readFileSync(home.configFile, 'utf8')) as { token: string }).token;
    const meStatus = async (token: string) => (await fetch(`${service.url}/v1/me`, { headers: bearer(token) })).status;
    async function signIn(args: string[] = []) {
      const { userCode, done } = await startLogin(home, args);
      expect((await decide(userCode, 'approve')).status).toBe(200);
      const login = await done;
      expect(login.code).toBe(0);
      return { login, token: savedToken() };
    }
    try {
      const first = await signIn();
      expect(first.login.stdout).not.toContain('previous');
      const second = await signIn();
      expect(second.token).not.toBe(first.token);
      expect(second.login.stdout.trim().split('\n').at(-1)).toBe('The previous session token is revoked.');
      expect(await meStatus(first.token)).toBe(401);
      expect(await meStatus(second.token)).toBe(200);

      const third = await signIn(['--json']);
      expect(JSON.parse(third.login.stdout)).toMatchObject({ url: service.url, previousTokenRevoked: true });
      expect(await meStatus(second.token)).toBe(401);
      expect(await meStatus(third.token)).toBe(200);
    } finally {
      home.remove();
    }
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
        // 1 s, 1 s, then 6 s after the slow_down; a loaded machine only adds.
        const gaps = fake.gapsS();
        expect(gaps).toHaveLength(3);
        for (const [i, expected] of [1, 1, 6].entries()) {
          expect(gaps[i]).toBeGreaterThanOrEqual(expected - 0.05);
          expect(gaps[i]).toBeLessThan(expected + 0.9);
        }
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
