import path from 'node:path';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import { startTestService, type TestService } from '../support/service';

const CHROMIUM = '/usr/bin/chromium';

/** What a page under a strict CSP runs, of itself (its token and origin from its URL): the SDK from its own origin, eval refused. */
const PAGE_SCRIPT = `
import * as sdk from '/strict/sdk.mjs';
const token = new URLSearchParams(location.search).get('token');
let evalRefused = false;
try { new Function('return 1'); } catch (err) { evalRefused = err.name; }
const client = new sdk.Client({ apiKey: token, baseUrl: location.origin });
const outputs = await client.ops['runs.node']({ node: 'math-add', inputs: { a: 1, b: 2 } });
const refused = await client.ops['nodes.get']({ id: 'math-add', extra: true }).catch((err) => ({ status: err.status, code: err.code, message: err.message }));
window.sdkResult = { evalRefused, outputs, refused };`;
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/**
 * The SDK's main entry point in a real browser (Debian's Chromium, installed by `make test`):
 * bundled for the browser platform (a Node module in it fails the bundling), imported by a page
 * of the service's origin, and used as a web app would: search, a streamed run with its events,
 * an upload of a Blob, a typed error, a draft validated offline.
 */
describe('the SDK in a browser', () => {
  let service: TestService;
  let browser: Browser;
  let code: string;

  beforeAll(async () => {
    const bundled = await build({
      entryPoints: [path.resolve(__dirname, '../../services/sdk/src/index.ts')],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
    });
    code = bundled.outputFiles[0]!.text;
    service = await startTestService();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it('searches, runs with a stream of events, uploads a Blob and types its errors', async () => {
    const page = await browser.newPage();
    // A page of the service's own origin: what the studio is.
    await page.goto(`${service.url}/healthz`);
    const png = await sharp({ create: { width: 6, height: 4, channels: 3, background: '#36c' } }).png().toBuffer();
    const workflow = { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 20, b: 22 } }, { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } }] };
    const result = await page.evaluate(
      async ({ code, token, workflow, pngBase64, origin }) => {
        const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
        // Written as text: the test's own transpiler would turn a literal import() into require().
        const importModule = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const sdk: any = await importModule(url);
        const client = new sdk.Client({ apiKey: token, baseUrl: origin });
        const found = (await sdk.searchNodes(client, { q: 'math-add' })).map((n: { id: string }) => n.id);
        const handle = sdk.startRun(client, { workflow });
        const events: string[] = [];
        for await (const event of handle.events()) events.push(`${event.seq}:${event.type}`);
        const outputs = await handle.result();
        const bytes = Uint8Array.from(atob(pngBase64), (c) => c.charCodeAt(0));
        const uploaded = await sdk.upload(client, new Blob([bytes], { type: 'image/png' }), { filename: 'dot.png' });
        const missing = await sdk.getNode(client, 'no-such-node').catch((err: unknown) => err instanceof sdk.NotFoundError && (err as { status: number }).status);
        const draft = sdk.createWorkflow();
        draft.addOutput('sum', draft.addNode('math-add', { a: 1, b: 2 }).out.result);
        return { found, events, outputs, uploaded: { kind: uploaded.kind, mimeType: uploaded.mimeType }, missing, valid: draft.validate().ok };
      },
      { code, token: service.account.token, workflow, pngBase64: png.toString('base64'), origin: new URL(service.url).origin },
    );
    expect(result.found).toEqual(['math-add']);
    expect(result.events[0]).toBe('1:run.started');
    expect(result.events.at(-1)).toMatch(/^\d+:run\.completed$/);
    expect(result.events.map((e) => Number(e.split(':')[0]))).toEqual(result.events.map((_, i) => i + 1));
    expect(result.outputs).toEqual({ sum: { kind: 'float', value: 42 } });
    expect(result.uploaded).toEqual({ kind: 'image', mimeType: 'image/png' });
    expect(result.missing).toBe(404);
    expect(result.valid).toBe(true);
  });

  it('works on a page whose CSP forbids eval: inputs go unchecked to the service, which checks them', async () => {
    const page = await browser.newPage();
    const nonce = 'sdk-test-nonce';
    await page.route(`${service.url}/strict/**`, (route) => {
      const url = new URL(route.request().url());
      if (url.pathname === '/strict/sdk.mjs') return route.fulfill({ status: 200, contentType: 'text/javascript', body: code });
      return route.fulfill({
        status: 200,
        contentType: 'text/html',
        headers: { 'content-security-policy': `default-src 'self'; script-src 'self' 'nonce-${nonce}'` },
        body: `<!doctype html><script type="module" nonce="${nonce}">${PAGE_SCRIPT}</script>`,
      });
    });
    // The page's own script calls the SDK: code the test harness evaluates is exempt from CSP.
    await page.goto(`${service.url}/strict/page?token=${encodeURIComponent(service.account.token)}`);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const result = (await (await page.waitForFunction(() => (globalThis as any).sdkResult, undefined, { timeout: 15_000 })).jsonValue()) as Record<string, unknown>;
    expect(result.evalRefused).toBe('EvalError');
    expect(result.outputs).toEqual({ outputs: { result: { kind: 'float', value: 3 } } });
    // Not checked in the page (status 0 would say so): the service's 400, with its message.
    expect(result.refused).toMatchObject({ status: 400, code: 'validation_failed', message: expect.stringContaining('unknown field "extra"') });
  });
});
