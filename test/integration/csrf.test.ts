import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createBrowserSession } from '../support/browser-session';
import { bearer, startTestService, type TestService } from '../support/service';
import { parseSse } from '../support/sse';

/**
 * The CSRF matrix of cookie-authenticated requests over real HTTP: method × Origin ×
 * Sec-Fetch-Site × Content-Type. Only mutations from the service's own origin pass with the
 * cookie; every GET passes; a bearer token passes whatever the headers say.
 */

type OriginCase = 'same' | 'other' | 'null' | 'absent';
type FetchSiteCase = 'same-origin' | 'same-site' | 'cross-site' | 'none' | 'absent';

const ORIGINS: OriginCase[] = ['same', 'other', 'null', 'absent'];
const FETCH_SITES: FetchSiteCase[] = ['same-origin', 'same-site', 'cross-site', 'none', 'absent'];
const CONTENT_TYPES = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=----csrf'];

const RUN_BODY = JSON.stringify({
  workflow: { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } }, { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } }] },
});

const matrix = ORIGINS.flatMap((origin) => FETCH_SITES.flatMap((fetchSite) => CONTENT_TYPES.map((contentType) => ({ origin, fetchSite, contentType }))));

/** What the cookie guard must decide: through only from the service's own origin. */
function passes(origin: OriginCase, fetchSite: FetchSiteCase): boolean {
  return origin === 'same' && (fetchSite === 'same-origin' || fetchSite === 'absent');
}

describe('cookie sessions are guarded against cross-site request forgery', () => {
  let service: TestService;
  /** One session for the runs cases (they do not end it). */
  let cookie: string;

  beforeAll(async () => {
    service = await startTestService({ env: { RATE_LIMIT_IP_PER_MINUTE: '0', RATE_LIMIT_TOKEN_PER_MINUTE: '0' } });
    cookie = (await createBrowserSession(service.prisma, service.account)).cookie;
  });

  afterAll(async () => {
    await service?.close();
  });

  function originHeaders(origin: OriginCase, fetchSite: FetchSiteCase): Record<string, string> {
    const headers: Record<string, string> = {};
    if (origin === 'same') headers.Origin = new URL(service.url).origin;
    if (origin === 'other') headers.Origin = 'https://attacker.example';
    if (origin === 'null') headers.Origin = 'null';
    if (fetchSite !== 'absent') headers['Sec-Fetch-Site'] = fetchSite;
    return headers;
  }

  function expectCompletedRun(res: request.Response): void {
    expect(res.status).toBe(200);
    const events = parseSse(res.text).map((m) => m.data);
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ type: 'run.completed', outputs: { sum: { value: 5 } } });
  }

  function expectRefused(res: request.Response): void {
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
    expect(res.body.error).toMatch(/refused/);
  }

  describe('POST /v1/runs with the session cookie', () => {
    it.each(matrix)('Origin $origin, Sec-Fetch-Site $fetchSite, $contentType', async ({ origin, fetchSite, contentType }) => {
      const res = await request(service.url).post('/v1/runs').set('Cookie', cookie).set(originHeaders(origin, fetchSite)).set('Content-Type', contentType).send(RUN_BODY);
      if (passes(origin, fetchSite)) expectCompletedRun(res);
      else expectRefused(res);
    });
  });

  describe('DELETE /v1/tokens/:id with the session cookie', () => {
    it.each(matrix)('Origin $origin, Sec-Fetch-Site $fetchSite, $contentType', async ({ origin, fetchSite, contentType }) => {
      const res = await request(service.url).delete(`/v1/tokens/${randomUUID()}`).set('Cookie', cookie).set(originHeaders(origin, fetchSite)).set('Content-Type', contentType);
      // Through the guard, an unknown token is 404; stopped by it, 403.
      if (passes(origin, fetchSite)) expect(res.status).toBe(404);
      else expectRefused(res);
    });
  });

  describe('POST /auth/sign-out with the session cookie', () => {
    it.each(matrix)('Origin $origin, Sec-Fetch-Site $fetchSite, $contentType', async ({ origin, fetchSite, contentType }) => {
      const session = await createBrowserSession(service.prisma, service.account);
      const res = await request(service.url).post('/auth/sign-out').set('Cookie', session.cookie).set(originHeaders(origin, fetchSite)).set('Content-Type', contentType).send('{}');
      const after = await request(service.url).get('/auth/session').set('Cookie', session.cookie);
      if (passes(origin, fetchSite)) {
        expect(res.status).toBe(204);
        expect(after.status).toBe(401);
      } else {
        expectRefused(res);
        // A refused sign-out leaves the session as it was.
        expect(after.status).toBe(200);
        expect(res.headers['set-cookie']).toBeUndefined();
      }
    });
  });

  describe('GET /v1/runs with the session cookie', () => {
    it.each(matrix)('Origin $origin, Sec-Fetch-Site $fetchSite, $contentType', async ({ origin, fetchSite, contentType }) => {
      const res = await request(service.url).get('/v1/runs?limit=1').set('Cookie', cookie).set(originHeaders(origin, fetchSite)).set('Content-Type', contentType);
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body.runs)).toBe(true);
    });
  });

  describe('POST /v1/runs with a bearer token (and the cookie beside it)', () => {
    it.each(matrix)('Origin $origin, Sec-Fetch-Site $fetchSite, $contentType', async ({ origin, fetchSite, contentType }) => {
      const res = await request(service.url)
        .post('/v1/runs')
        .set(bearer(service.account.token))
        .set('Cookie', cookie)
        .set(originHeaders(origin, fetchSite))
        .set('Content-Type', contentType)
        .send(RUN_BODY);
      expectCompletedRun(res);
    });
  });

  describe('without an Origin header, the Referer decides', () => {
    it.each([
      ['a Referer from the service', () => `${service.url}/editor/flows/1`, 204],
      ['a Referer from another site', () => 'https://attacker.example/page.html', 403],
      ['a Referer from another port of the same host', () => `http://127.0.0.1:${Number(new URL(service.url).port) + 1}/`, 403],
      ['no Referer either', () => undefined, 403],
    ])('%s', async (_what, referer, status) => {
      const session = await createBrowserSession(service.prisma, service.account);
      const call = request(service.url).post('/auth/sign-out').set('Cookie', session.cookie).set('Content-Type', 'application/json');
      const ref = referer();
      const res = await (ref === undefined ? call : call.set('Referer', ref)).send('{}');
      expect(res.status).toBe(status);
    });

    it('refuses a forged multipart form post with 403 before its body is read', async () => {
      const form = '------csrf\r\nContent-Disposition: form-data; name="x"\r\n\r\ny\r\n------csrf--\r\n';
      const res = await request(service.url).post('/v1/runs').set('Cookie', cookie).set('Origin', 'https://attacker.example').set('Content-Type', 'multipart/form-data; boundary=----csrf').send(form);
      expectRefused(res);
    });
  });

  it('names what was wrong', async () => {
    const cross = await request(service.url).post('/v1/runs').set('Cookie', cookie).set('Origin', 'https://attacker.example').send(RUN_BODY);
    expect(cross.body.error).toContain('Origin is "https://attacker.example"');
    expect(cross.body.error).toContain(new URL(service.url).origin);
    const site = await request(service.url).post('/v1/runs').set('Cookie', cookie).set('Origin', new URL(service.url).origin).set('Sec-Fetch-Site', 'cross-site').send(RUN_BODY);
    expect(site.body.error).toContain('Sec-Fetch-Site is "cross-site"');
    const none = await request(service.url).post('/v1/runs').set('Cookie', cookie).send(RUN_BODY);
    expect(none.body.error).toContain('must carry an Origin (or Referer) header');
  });
});
