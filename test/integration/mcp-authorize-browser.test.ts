import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { createPasswordUser } from '../support/browser-session';
import { startTestService, type TestService } from '../support/service';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/**
 * The MCP authorization page in a real browser: what the fetch-based tests cannot show is that
 * Chromium lets the Allow button's post end at the client's redirect URI under the page's CSP
 * (`form-action` applies to the redirects after a form post). `SCREENSHOT_DIR` keeps pictures.
 */
describe('the MCP authorization page in Chromium', () => {
  let service: TestService;
  let browser: Browser;
  // The client's loopback listener (RFC 8252 §7.3), which the page's redirect reaches.
  let listener: Server;
  let redirect: string;
  const landed: URL[] = [];

  beforeAll(async () => {
    service = await startTestService();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
    listener = createServer((req, res) => {
      // Only the redirect counts: the browser may also ask this origin for its /favicon.ico.
      const url = new URL(req.url!, redirect);
      if (url.pathname === new URL(redirect).pathname) landed.push(url);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>You can close this window.</p>');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    redirect = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => listener?.close(resolve));
    await service?.close();
  });

  it('signs in, shows the consent screen, and Allow lands on the redirect URI with the code and state', async () => {
    const registered = await fetch(`${service.url}/oauth/mcp/register`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_name: 'Claude Desktop', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
    });
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const user = await createPasswordUser(service.prisma, service.account.orgId);
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const query = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', scope: 'read run', state: 'xyz' });

    const context = await browser.newContext({ viewport: { width: 760, height: 720 } });
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) blocked.push(message.text());
    });
    const shot = async (name: string) => {
      if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: path.join(process.env.SCREENSHOT_DIR, `${name}.png`), fullPage: true });
    };

    await page.goto(`${service.url}/oauth/mcp/authorize?${query.toString()}`);
    await shot('mcp-authorize-sign-in');
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await Promise.all([page.waitForURL(/\/oauth\/mcp\/authorize\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('h1')).toBe('Allow Claude Desktop?');
    await shot('mcp-authorize-consent');
    await Promise.all([page.waitForURL((url) => url.href.startsWith(redirect)), page.click('button[value=approve]')]);

    expect(blocked).toEqual([]);
    expect(landed).toHaveLength(1);
    expect(landed[0]!.searchParams.get('state')).toBe('xyz');
    expect(landed[0]!.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await context.close();
  });
});
