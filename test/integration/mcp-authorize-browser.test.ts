import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { createPasswordUser } from '../support/browser-session';
import { startTestService, type TestService } from '../support/service';
import { ARTIFACTS, launchChromium } from '../support/studio-browser';

/**
 * The hosted MCP's consent page (the studio's, at the authorization endpoint) in a real browser:
 * a signed-out person goes through the studio's sign-in and comes back to the request; Allow's
 * form post ends at the client's redirect URI under the page's CSP (`form-action` applies to the
 * redirects after a form post too) with the code and state; Deny sends `access_denied`; a request
 * the server cannot trust is shown, never redirected.
 */
describe('the MCP consent page in Chromium', () => {
  let service: TestService;
  let browser: Browser;
  // The client's loopback listener (RFC 8252 §7.3), which the page's redirect reaches.
  let listener: Server;
  let redirect: string;
  let clientId: string;
  const landed: URL[] = [];

  beforeAll(async () => {
    service = await startTestService();
    browser = await launchChromium();
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    listener = createServer((req, res) => {
      // Only the redirect counts: the browser may also ask this origin for its /favicon.ico.
      const url = new URL(req.url!, redirect);
      if (url.pathname === new URL(redirect).pathname) landed.push(url);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>You can close this window.</p>');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    redirect = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
    const registered = await fetch(`${service.url}/oauth/mcp/register`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_name: 'Claude Desktop', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
    });
    clientId = ((await registered.json()) as { client_id: string }).client_id;
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => listener?.close(resolve));
    await service?.close();
  });
  beforeEach(() => {
    landed.length = 0;
  });

  function authorizeUrl(params: Record<string, string> = {}): string {
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const query = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', scope: 'read run', state: 'xyz', ...params });
    return `${service.url}/oauth/mcp/authorize?${query.toString()}`;
  }

  /** A page that records CSP refusals, console errors and uncaught exceptions. */
  async function open(viewport = { width: 1280, height: 800 }): Promise<{ page: Page; problems: string[]; close: () => Promise<void> }> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      const text = message.text();
      if (message.type() === 'error' || /Content Security Policy/i.test(text)) problems.push(text);
    });
    page.on('pageerror', (err) => problems.push(err.message));
    return { page, problems, close: () => context.close() };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  async function signIn(page: Page, shotName: string): Promise<void> {
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    await page.waitForURL(/\/sign-in\?next=%2Foauth%2Fmcp%2Fauthorize%3F/);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await shot(page, shotName);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/oauth\/mcp\/authorize\?/);
  }

  it('signed out: the studio sign-in, back to the consent page, and Allow lands on the redirect URI with the code and state', async () => {
    const { page, problems, close } = await open();
    await page.goto(authorizeUrl());
    await signIn(page, 'mcp-consent-sign-in');
    await page.getByRole('heading', { name: 'Allow Claude Desktop?' }).waitFor();
    const card = (await page.locator('main').textContent())!;
    expect(card).toContain(new URL(redirect).host);
    expect(card).toContain("spend the organization's credit");
    expect(card).toContain(service.account.orgSlug);
    await shot(page, 'mcp-consent');
    await Promise.all([page.waitForURL((url) => url.href.startsWith(redirect)), page.getByRole('button', { name: 'Allow' }).click()]);

    expect(problems).toEqual([]);
    expect(landed).toHaveLength(1);
    expect(landed[0]!.searchParams.get('state')).toBe('xyz');
    expect(landed[0]!.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await close();
  });

  it('Deny sends access_denied with the state; the page fits a phone', async () => {
    const { page, problems, close } = await open({ width: 390, height: 844 });
    await page.goto(authorizeUrl({ scope: 'read' }));
    await signIn(page, 'mcp-consent-sign-in-phone');
    await page.getByRole('heading', { name: 'Allow Claude Desktop?' }).waitFor();
    expect(await page.getByRole('note').count()).toBe(0);
    await shot(page, 'mcp-consent-phone');
    await Promise.all([page.waitForURL((url) => url.href.startsWith(redirect)), page.getByRole('button', { name: 'Deny' }).click()]);
    expect(problems).toEqual([]);
    expect(landed).toHaveLength(1);
    expect(Object.fromEntries(landed[0]!.searchParams)).toMatchObject({ error: 'access_denied', state: 'xyz' });
    await close();
  });

  it('reached from a sign-in page loaded on its own (a reload), loads itself from the endpoint, so Allow still lands', async () => {
    const { page, problems, close } = await open();
    const target = new URL(authorizeUrl());
    await page.goto(`${service.url}/sign-in?next=${encodeURIComponent(`${target.pathname}${target.search}`)}`);
    await signIn(page, 'mcp-consent-sign-in-reloaded');
    await page.getByRole('heading', { name: 'Allow Claude Desktop?' }).waitFor();
    await Promise.all([page.waitForURL((url) => url.href.startsWith(redirect)), page.getByRole('button', { name: 'Allow' }).click()]);
    expect(problems).toEqual([]);
    expect(landed).toHaveLength(1);
    expect(landed[0]!.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await close();
  });

  it('shows a redirect URI the client did not register, and sends nothing there', async () => {
    const { page, close } = await open();
    const response = await page.goto(authorizeUrl({ redirect_uri: `${redirect}/elsewhere` }));
    expect(response!.status()).toBe(400);
    expect(await page.textContent('h1')).toBe('This authorization request cannot be used');
    expect(await page.textContent('main')).toContain('is not one the application registered');
    await shot(page, 'mcp-consent-bad-request');
    expect(landed).toEqual([]);
    await close();
  });
});
