import { hashDeviceCode } from '../../services/platform/device-code';
import { createPasswordUser } from '../support/browser-session';
import { FormBrowser, type BrowserPage } from '../support/form-browser';
import { bearer, startTestService, type TestService } from '../support/service';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri_complete: string;
}

/** The value of a form field in a page (inputs' `value`, a select's selected option). */
function fieldValue(html: string, name: string): string | null {
  const input = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  return input ? input[1]! : null;
}

describe('the device-login approval page (GET and POST /device)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  async function requestCode(clientId = 'svc-cli', base = service.url): Promise<DeviceCode> {
    const res = await fetch(`${base}/oauth/device/code`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: clientId }).toString(),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as DeviceCode;
  }

  async function poll(code: DeviceCode, clientId = 'svc-cli'): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: code.device_code, client_id: clientId }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** A new person (member of the seeded organization) signed in through the page's form. */
  async function signedInBrowser(userCode = '', base = service.url): Promise<{ browser: FormBrowser; page: BrowserPage; user: { id: string; email: string } }> {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browser = new FormBrowser(base);
    const page = await browser.post('/device', { action: 'sign-in', email: user.email, password: user.password, user_code: userCode });
    expect(browser.signedIn).toBe(true);
    return { browser, page, user };
  }

  it('signs in, shows the request, approves it, and the CLI gets a session token that works', async () => {
    const code = await requestCode();
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browser = new FormBrowser(service.url);
    const verification = new URL(code.verification_uri_complete);

    const first = await browser.get(`${verification.pathname}${verification.search}`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('x-frame-options')).toBe('DENY');
    const csp = first.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('script-src');
    expect(first.html).toContain('Sign in to approve a login');
    expect(first.html).not.toMatch(/<script/i);
    expect(fieldValue(first.html, 'user_code')).toBe(code.user_code);
    // The stylesheet carries the nonce the policy names.
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(first.html).toContain(`<style nonce="${nonce}">`);

    const confirm = await browser.post('/device', { action: 'sign-in', email: user.email, password: user.password, user_code: code.user_code });
    expect(confirm.status).toBe(200);
    expect(confirm.html).toContain('Approve this login?');
    expect(confirm.html).toContain(user.email);
    expect(confirm.html).toContain('svc-cli');
    expect(confirm.html).toContain('<code>read</code>');
    expect(confirm.html).toContain('<code>run</code>');
    expect(confirm.html).toContain(service.account.orgSlug);
    expect(fieldValue(confirm.html, 'user_code')).toBe(code.user_code);

    const approved = await browser.post('/device', { action: 'approve', user_code: code.user_code, org: fieldValue(confirm.html, 'org')! });
    expect(approved.status).toBe(200);
    expect(approved.html).toContain('Approved: return to your terminal');

    const granted = await poll(code);
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ access_token: expect.stringMatching(/^svcs_/), token_type: 'Bearer', scope: 'read run' });
    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(granted.body.access_token as string) });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ user: { id: user.id, email: user.email }, organization: { id: service.account.orgId }, token: { kind: 'session' } });

    // The code is spent: looking it up again says so.
    const again = await browser.get(`/device?user_code=${code.user_code}`);
    expect(again.status).toBe(409);
    expect(again.html).toContain('already approved');
  });

  it('denies: the result page says so and the CLI is told access_denied', async () => {
    const code = await requestCode();
    const { browser, page } = await signedInBrowser(code.user_code);
    expect(page.html).toContain('Approve this login?');
    const denied = await browser.post('/device', { action: 'deny', user_code: code.user_code });
    expect(denied.status).toBe(200);
    expect(denied.html).toContain('Denied');
    expect((await poll(code)).body).toMatchObject({ error: 'access_denied' });
  });

  it('shows the code form after sign-in without a code, and looks up what is typed there (any case, no dash)', async () => {
    const code = await requestCode();
    const { browser, page } = await signedInBrowser();
    expect(page.status).toBe(200);
    expect(page.html).toContain('Enter the code from your terminal');
    expect(page.html).toMatch(/<form method="get" action="\/device">/);
    const typed = code.user_code.replace('-', '').toLowerCase();
    const confirm = await browser.get(`/device?user_code=${typed}`);
    expect(confirm.status).toBe(200);
    expect(fieldValue(confirm.html, 'user_code')).toBe(code.user_code);
  });

  it('re-shows the sign-in form on a wrong password, with the email kept and no cookie set', async () => {
    const code = await requestCode();
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browser = new FormBrowser(service.url);
    const page = await browser.post('/device', { action: 'sign-in', email: user.email, password: 'not-the-password', user_code: code.user_code });
    expect(page.status).toBe(401);
    expect(page.html).toContain('the email or password is wrong');
    expect(fieldValue(page.html, 'email')).toBe(user.email);
    expect(fieldValue(page.html, 'user_code')).toBe(code.user_code);
    expect(browser.signedIn).toBe(false);
  });

  it('says so when the code is unknown, malformed, or expired, and keeps the typed code in the form', async () => {
    const code = await requestCode();
    const { browser } = await signedInBrowser();
    const unknownCode = code.user_code === 'ZZZZ-ZZZZ' ? 'XXXX-XXXX' : 'ZZZZ-ZZZZ';
    const unknown = await browser.get(`/device?user_code=${unknownCode}`);
    expect(unknown.status).toBe(404);
    expect(unknown.html).toContain(`no login request has the code ${unknownCode}`);
    expect(fieldValue(unknown.html, 'user_code')).toBe(unknownCode);

    const malformed = await browser.get('/device?user_code=AAAA-0000');
    expect(malformed.status).toBe(400);
    expect(malformed.html).toContain('user_code must be the 8 letters');

    await service.prisma.deviceAuthorization.update({ where: { deviceCodeHash: hashDeviceCode(code.device_code) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = await browser.get(`/device?user_code=${code.user_code}`);
    expect(expired.status).toBe(410);
    expect(expired.html).toContain('expired');
    const lateApproval = await browser.post('/device', { action: 'approve', user_code: code.user_code });
    expect(lateApproval.status).toBe(410);
    expect(lateApproval.html).toContain('expired');
  });

  it('refuses cross-origin posts with 403 before reading them: no sign-in, no approval', async () => {
    const code = await requestCode();
    const { browser, user } = await signedInBrowser(code.user_code);
    const forged = await browser.post('/device', { action: 'approve', user_code: code.user_code }, { Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(forged.html).toContain('cross-site request refused');
    const noOrigin = await fetch(`${service.url}/device`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'https://evil.example' },
      body: new URLSearchParams({ action: 'sign-in', email: user.email, password: 'whatever-it-is' }).toString(),
    });
    expect(noOrigin.status).toBe(403);
    expect(await noOrigin.text()).toContain('cross-origin request refused');
    expect(noOrigin.headers.getSetCookie()).toEqual([]);
    expect((await poll(code)).body).toMatchObject({ error: 'authorization_pending' });
  });

  it('lets a member of two organizations approve for the second one', async () => {
    const code = await requestCode();
    const { browser, user, page } = await signedInBrowser(code.user_code);
    const second = await service.prisma.organization.create({ data: { slug: `second-${Date.now()}`, name: 'Second Org' } });
    await service.prisma.membership.create({ data: { orgId: second.id, userId: user.id, role: 'member' } });
    expect(page.html).not.toContain('<select');

    const confirm = await browser.get(`/device?user_code=${code.user_code}`);
    expect(confirm.html).toContain('<select id="org" name="org">');
    expect(confirm.html).toMatch(new RegExp(`<option value="${service.account.orgSlug}" selected>`));
    expect(confirm.html).toContain(`<option value="${second.slug}">Second Org (${second.slug})</option>`);

    const approved = await browser.post('/device', { action: 'approve', user_code: code.user_code, org: second.slug });
    expect(approved.status).toBe(200);
    expect(approved.html).toContain('Second Org');
    const granted = await poll(code);
    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(granted.body.access_token as string) });
    expect(await me.json()).toMatchObject({ user: { id: user.id }, organization: { id: second.id, slug: second.slug } });
  });

  it('refuses an organization the person does not belong to and shows the request again', async () => {
    const code = await requestCode();
    const { browser } = await signedInBrowser(code.user_code);
    const page = await browser.post('/device', { action: 'approve', user_code: code.user_code, org: 'someone-elses' });
    expect(page.status).toBe(404);
    expect(page.html).toContain('you are not a member of an organization &quot;someone-elses&quot;');
    expect(page.html).toContain('Approve this login?');
    expect((await poll(code)).body).toMatchObject({ error: 'authorization_pending' });
  });

  it('shows a hostile client_id as text', async () => {
    const hostile = '<script>alert(1)</script>"\'&';
    const code = await requestCode(hostile);
    const { page } = await signedInBrowser(code.user_code);
    expect(page.status).toBe(200);
    expect(page.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;');
    expect(page.html).not.toContain('<script');
  });

  it('signs out: the session is revoked and the sign-in form comes back', async () => {
    const { browser } = await signedInBrowser();
    const row = await service.prisma.accessToken.findFirstOrThrow({ where: { kind: 'browser' }, orderBy: { createdAt: 'desc' } });
    const page = await browser.post('/device', { action: 'sign-out' });
    expect(browser.signedIn).toBe(false);
    expect(page.status).toBe(200);
    expect(page.html).toContain('Sign in to approve a login');
    expect((await service.prisma.accessToken.findUniqueOrThrow({ where: { id: row.id } })).revokedAt).not.toBeNull();
  });

  it('serves the whole flow under /api as well', async () => {
    const code = await requestCode('svc-cli', `${service.url}/api`);
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browser = new FormBrowser(`${service.url}/api`);
    const first = await browser.get(`/device?user_code=${code.user_code}`);
    expect(first.status).toBe(200);
    expect(first.html).toContain('action="/api/device"');
    const confirm = await browser.post('/device', { action: 'sign-in', email: user.email, password: user.password, user_code: code.user_code });
    expect(confirm.html).toContain('Approve this login?');
    expect(confirm.html).toContain('action="/api/device"');
    const approved = await browser.post('/device', { action: 'approve', user_code: code.user_code });
    expect(approved.html).toContain('Approved: return to your terminal');
    expect((await poll(code)).status).toBe(200);
  });

  it('answers other methods with 405, and a form stuffed with fields with 400', async () => {
    const res = await fetch(`${service.url}/device`, { method: 'PUT' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
    const stuffed = await new FormBrowser(service.url).post('/device', Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, 'x'])));
    expect(stuffed.status).toBe(400);
    expect(stuffed.html).toContain('too many fields');
  });
});
