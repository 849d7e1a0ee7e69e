import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { STUDIO_DIST } from '../support/studio-build';
import { startTestService, type TestService } from '../support/service';

/** The first hashed bundle the built index.html loads. */
function firstScript(html: string): string {
  const match = /<script[^>]+src="(\/studio-assets\/[^"]+\.js)"/.exec(html);
  if (!match) throw new Error(`no studio-assets script in index.html:\n${html}`);
  return match[1]!;
}

describe('the API serves the built studio from its own origin', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { ROLE: 'api' } });
  });

  afterAll(async () => {
    await service?.close();
  });

  it.each(['/', '/sign-in', '/workflows/3f1c4a52-0000-4000-8000-000000000000', '/runs', '/runs/abc', '/settings/tokens'])('answers %s with the studio page, revalidated on every load and locked down', async (page) => {
    const res = await request(service.url).get(page).expect(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toContain('<div id="root"></div>');
    expect(res.text).toBe(fs.readFileSync(path.join(STUDIO_DIST, 'index.html'), 'utf8'));
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('serves hashed bundles as immutable, and a missing one is a 404, not the page', async () => {
    const html = (await request(service.url).get('/').expect(200)).text;
    const script = firstScript(html);
    const res = await request(service.url).get(script).expect(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(res.headers['cache-control']).toMatch(/immutable/);
    expect(res.headers['cache-control']).toMatch(/max-age=31536000/);
    const missing = await request(service.url).get('/studio-assets/no-such-bundle.js');
    expect(missing.status).toBe(404);
    expect(missing.text).not.toContain('<div id="root">');
  });

  it('keeps the API where it was: /api and /v1 paths never answer with the studio page', async () => {
    const catalog = await request(service.url).get('/api/v1/nodes').expect(200);
    expect(catalog.headers['content-type']).toMatch(/application\/json/);
    const unknown = await request(service.url).get('/api/settings/tokens').expect(404);
    expect(unknown.body.code).toBe('not_found');
    const prefixedPage = await request(service.url).get('/api/').expect(404);
    expect(prefixedPage.headers['content-type']).toMatch(/application\/json/);
  });

  it('does not serve pages to other methods', async () => {
    const res = await request(service.url).post('/runs').send({});
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/no route for POST \/runs/);
  });
});

describe('a deployment whose studio is not built', () => {
  let service: TestService;
  let emptyDir: string;

  beforeAll(async () => {
    emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-no-studio-'));
    service = await startTestService({ env: { ROLE: 'api', STUDIO_DIR: emptyDir } });
  });

  afterAll(async () => {
    await service?.close();
    fs.rmSync(emptyDir, { recursive: true, force: true });
  });

  it('answers the page with a 503 that says how to build it, and the API still works', async () => {
    const res = await request(service.url).get('/').expect(503);
    expect(res.body.code).toBe('unavailable');
    expect(res.body.error).toMatch(/the studio is not built/);
    expect(res.body.error).toMatch(/npm run build -w services\/studio/);
    await request(service.url).get('/v1/nodes').expect(200);
  });
});
