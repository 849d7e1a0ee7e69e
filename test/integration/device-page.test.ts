import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hashDeviceCode } from '../../services/platform/device-code';
import { createPasswordUser } from '../support/browser-session';
import { FormBrowser } from '../support/form-browser';
import { bearer, startTestService, type TestService } from '../support/service';
import { ARTIFACTS, launchChromium } from '../support/studio-browser';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri_complete: string;
}

/**
 * The studio's device-login approval page (`/device`, the verification URL `svc login` opens) in
 * Chromium against the real stack: sign-in through the studio and back, the request shown,
 * approve (the CLI's poll then gets a working session token), deny, refusals in the server's
 * words; and the security the page relies on: the page's headers, and the JSON decision routes
 * refusing a cross-origin post.
 */
describe('the device approval page (/device, the studio)', () => {
  let service: TestService;
  let browser: Browser;
  const problems: string[] = [];

  beforeAll(async () => {
    service = await startTestService();
    browser = await launchChromium();
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });
  afterEach(() => {
    // No console errors or uncaught exceptions on any page, beside the browser's own line for a
    // code the service refuses (400, 404, 409, 410), which the page shows in the service's words.
    const seen = problems.splice(0);
    expect(seen.filter((p) => !/status of (400|404|409|410)/.test(p))).toEqual([]);
  });

  async function requestCode(clientId = 'svc-cli'): Promise<DeviceCode> {
    const res = await fetch(`${service.url}/oauth/device/code`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: clientId }).toString(),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as DeviceCode;
  }

  async function poll(code: DeviceCode): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: code.device_code, client_id: 'svc-cli' }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  async function newPage(viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    return { context, page };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  /** The verification URL as the CLI opens it, on this test's service. */
  const verificationPath = (code: DeviceCode) => {
    const url = new URL(code.verification_uri_complete);
    return `${url.pathname}${url.search}`;
  };

  /** A new member of the seeded organization, signed in through the studio's sign-in page, then at `target`. */
  async function signedIn(target: string, viewport?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page; user: { id: string; email: string } }> {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const { context, page } = await newPage(viewport);
    await page.goto(`${service.url}${target}`);
    await page.waitForURL(/\/sign-in\?next=/);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/device');
    return { context, page, user };
  }

  it('is the studio page, with the headers an approval page needs; the old form posts are gone', async () => {
    const res = await fetch(`${service.url}/device?user_code=BCDF-GHJK`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')?.toLowerCase()).toBe('text/html; charset=utf-8');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("form-action 'self'");
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    // The page itself holds no code or person: those come from device.lookup, which is no-store.
    expect(await res.text()).not.toContain('BCDF-GHJK');
    const posted = await fetch(`${service.url}/device`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: service.url }, body: 'action=approve' });
    expect(posted.status).toBe(404);
  });

  it('signed out: sign-in, back to the code, approve; the CLI gets a session token that works', async () => {
    const code = await requestCode();
    const { context, page, user } = await signedIn(verificationPath(code));
    await page.getByRole('heading', { name: 'Approve this login?' }).waitFor();
    expect(await page.getByLabel(`Code ${code.user_code}`).textContent()).toBe(code.user_code);
    const card = (await page.locator('main').textContent())!;
    expect(card).toContain('svc-cli');
    expect(card).toContain("spend the organization's credit");
    expect(await page.getByRole('note').textContent()).toContain("spend the organization's credit");
    await shot(page, 'device-approve');

    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Device approved' }).waitFor();
    expect(await page.getByRole('status').textContent()).toContain('You can return to your terminal');
    await shot(page, 'device-approved');

    const granted = await poll(code);
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ access_token: expect.stringMatching(/^svcs_/), token_type: 'Bearer', scope: 'read run' });
    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(granted.body.access_token as string) });
    expect(await me.json()).toMatchObject({ user: { id: user.id, email: user.email }, organization: { id: service.account.orgId }, token: { kind: 'session' } });

    // Spent: opening the link again says so in the server's words.
    await page.goto(`${service.url}${verificationPath(code)}`);
    await page.getByRole('heading', { name: 'Code already used' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('was already approved');
    await context.close();
  });

  it('denies: the page says so and the CLI is told access_denied', async () => {
    const code = await requestCode();
    const { context, page } = await signedIn(verificationPath(code));
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByRole('heading', { name: 'Login denied' }).waitFor();
    await shot(page, 'device-denied');
    expect((await poll(code)).body).toMatchObject({ error: 'access_denied' });
    await context.close();
  });

  it('asks for the code without one, and shows unknown and expired codes in the server\'s words', async () => {
    const code = await requestCode();
    const { context, page } = await signedIn('/device', { width: 390, height: 844 });
    await page.getByRole('heading', { name: 'Enter the code from your terminal' }).waitFor();
    await shot(page, 'device-enter-code-phone');
    const unknownCode = code.user_code === 'ZZZZ-ZZZZ' ? 'XXXX-XXXX' : 'ZZZZ-ZZZZ';
    await page.getByRole('textbox', { name: 'Code' }).fill(unknownCode.toLowerCase().replace('-', ''));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Code not found' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain(`no login request has the code ${unknownCode}`);
    await shot(page, 'device-unknown-code');

    await service.prisma.deviceAuthorization.update({ where: { deviceCodeHash: hashDeviceCode(code.device_code) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await page.getByRole('textbox', { name: 'Code' }).fill(code.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'This code has expired' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain(`the code ${code.user_code} expired`);
    await shot(page, 'device-expired-code');
    await context.close();
  });

  it('lets a member of two organizations approve for the second one', async () => {
    const code = await requestCode();
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const second = await service.prisma.organization.create({ data: { slug: `second-${Date.now()}`, name: 'Second Org' } });
    await service.prisma.membership.create({ data: { orgId: second.id, userId: user.id, role: 'member' } });
    const { context, page } = await newPage();
    await page.goto(`${service.url}${verificationPath(code)}`);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Approve this login?' }).waitFor();
    await page.getByLabel('Organization').selectOption(second.slug);
    await shot(page, 'device-approve-two-orgs');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Device approved' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('Second Org');
    const granted = await poll(code);
    const me = await fetch(`${service.url}/v1/me`, { headers: bearer(granted.body.access_token as string) });
    expect(await me.json()).toMatchObject({ user: { id: user.id }, organization: { id: second.id, slug: second.slug } });
    await context.close();
  });

  it('shows a hostile client_id as text', async () => {
    const hostile = '<script>window.hacked=1</script>"\'&';
    const code = await requestCode(hostile);
    const { context, page } = await signedIn(verificationPath(code));
    await page.getByRole('heading', { name: 'Approve this login?' }).waitFor();
    expect(await page.locator('main code').first().textContent()).toBe(hostile);
    expect(await page.evaluate('typeof window.hacked')).toBe('undefined');
    await context.close();
  });

  it('refuses a cross-origin approval with 403 before deciding anything', async () => {
    const code = await requestCode();
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const browserLike = new FormBrowser(service.url);
    await browserLike.signIn(user.email, user.password);
    // The same session cookie, sent by another site's page: the CSRF guard refuses it.
    const cookie = browserLike.cookie()!;
    const forged = await fetch(`${service.url}/api/oauth/device/approve`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Cookie: cookie, Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' },
      body: JSON.stringify({ user_code: code.user_code }),
    });
    expect(forged.status).toBe(403);
    const sameSite = await fetch(`${service.url}/api/oauth/device/lookup?user_code=${code.user_code}`, { headers: { Cookie: cookie, Origin: service.url, 'Sec-Fetch-Site': 'same-origin' } });
    expect(sameSite.status).toBe(200);
    expect((await poll(code)).body).toMatchObject({ error: 'authorization_pending' });
  });
});
