import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { safeFetch } from '../../services/nodes';
import { issueSessionToken } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';

/** A raw request (fetch cannot send a lying Content-Encoding), answered as status and parsed body. */
function rawPost(url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: { error?: string; code?: string } }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Nesting `depth` arrays deep around a value, as JSON text (JSON.stringify would overflow the stack). */
function nested(depth: number): string {
  return `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

describe('hostile input: every malformed request is a 4xx that says what to fix, and none stalls the API', () => {
  let service: TestService;
  /** A device-login session: what POST /v1/tokens needs. */
  let session: string;

  beforeAll(async () => {
    service = await startTestService();
    session = await issueSessionToken(service.prisma, service.account);
  });

  afterAll(async () => {
    await service?.close();
  });

  const post = (path: string, body: string, token = service.account.token) =>
    fetch(`${service.url}${path}`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body });

  async function expect4xx(res: Response, status: number, pattern: RegExp): Promise<{ error: string; issues?: unknown[] }> {
    const body = (await res.json()) as { error: string; issues?: unknown[] };
    expect({ status: res.status, error: body.error }).toEqual({ status, error: expect.stringMatching(pattern) });
    return body;
  }

  describe('bounded work on huge invalid bodies', () => {
    it('answers 80,000 wrong-typed inputs with a short error, and /healthz issued beside it answers first', async () => {
      const inputs: Record<string, unknown> = {};
      for (let i = 0; i < 80_000; i += 1) inputs[`k${i}`] = [i];
      const body = JSON.stringify({ node: 'text-regex-replace', inputs });
      expect(body.length).toBeLessThan(service.config.bodyLimitBytes);

      const order: string[] = [];
      const big = post('/v1/runs/node', body).then(async (res) => {
        order.push('big');
        return { status: res.status, text: await res.text() };
      });
      const health = fetch(`${service.url}/healthz`).then((res) => {
        order.push('healthz');
        return res.status;
      });
      const [answer, healthStatus] = await Promise.all([big, health]);
      expect(healthStatus).toBe(200);
      expect(order).toEqual(['healthz', 'big']);
      expect(answer.status).toBe(400);
      // The old answer listed every problem: 9.3 MB.
      expect(answer.text.length).toBeLessThan(4096);
      expect(answer.text).toMatch(/inputs.*at most 256/);
    });

    it('lists the first problems of a body within the limits and counts the rest as "and N more"', async () => {
      const inputs: Record<string, unknown> = {};
      for (let i = 0; i < 200; i += 1) inputs[`k${i}`] = { wrong: [i] };
      const res = await post('/v1/runs/node', JSON.stringify({ node: 'text-regex-replace', inputs }));
      // Two problems an input (not an artifact: neither value nor ref, and an unknown field) and the hint on what an artifact is, once.
      const body = await expect4xx(res, 400, /and 391 more problems/);
      expect(JSON.stringify(body).length).toBeLessThan(4096);
      expect(body.issues).toHaveLength(10);
    });

    it('refuses a 200,000-item scopes list by its size, not after comparing every pair', async () => {
      const res = await post('/v1/tokens', JSON.stringify({ name: 'many', scopes: new Array(200_000).fill('read') }), session);
      const body = await expect4xx(res, 400, /scopes.*at most 2/);
      expect(JSON.stringify(body).length).toBeLessThan(4096);
    });
  });

  describe('malformed percent-escapes in a path', () => {
    it.each([
      ['GET', '/v1/runs/%'],
      ['GET', '/v1/workflows/%ff'],
      ['GET', '/v1/nodes/%'],
      ['DELETE', '/v1/tokens/%'],
    ])('%s %s is 400 naming the escape', async (method, path) => {
      const res = await fetch(`${service.url}${path}`, { method, headers: bearer(method === 'DELETE' ? session : service.account.token) });
      await expect4xx(res, 400, /percent-escape.*%25/);
    });
  });

  describe('spend caps', () => {
    it('accepts maxCostUsd 1e10 and caps it to 1.00', async () => {
      const res = await post('/v1/runs/node', JSON.stringify({ node: 'text-regex-replace', inputs: { text: 'a b', pattern: ' ', replacement: '-' }, maxCostUsd: 1e10 }));
      expect(res.status).toBe(200);
    });

    it.each([0.0000001, 0.00000099])('refuses maxCostUsd %s (below one micro-USD) before anything runs', async (cap) => {
      const res = await post('/v1/runs/node', JSON.stringify({ node: 'text-regex-replace', inputs: { text: 'a', pattern: ' ', replacement: '-' }, maxCostUsd: cap }));
      await expect4xx(res, 400, /maxCostUsd.*0\.000001/);
    });
  });

  describe('text Postgres cannot store', () => {
    it.each([
      ['U+0000 in a node input', '/v1/runs/node', '{"node":"text-regex-replace","inputs":{"text":"a\\u0000b","pattern":" ","replacement":"-"}}', 'inputs.text'],
      ['a lone surrogate in a node input', '/v1/runs/node', '{"node":"text-regex-replace","inputs":{"text":"a\\ud800b","pattern":" ","replacement":"-"}}', 'inputs.text'],
      ['U+0000 in an input name', '/v1/runs/node', '{"node":"text-regex-replace","inputs":{"te\\u0000xt":"a"}}', 'inputs'],
      ['U+0000 in a workflow node label', '/v1/runs', '{"workflow":{"version":2,"nodes":[{"id":"a","uses":"math-add","inputs":{"a":1,"b":2},"label":"a\\u0000"},{"id":"o","uses":"output","inputs":{"value":"${a.result}"}}]}}', 'workflow.nodes[0].label'],
      ['a lone surrogate in a token name', '/v1/tokens', '{"name":"ci \\udc00","scopes":["read"]}', 'name'],
    ])('refuses %s with 400 naming where', async (_what, path, body, where) => {
      const res = await post(path, body, path === '/v1/tokens' ? session : service.account.token);
      const escaped = where.replace(/[.[\]]/g, '\\$&');
      await expect4xx(res, 400, new RegExp(`${escaped}.*(U\\+0000|surrogate)`));
    });
  });

  it('refuses an input nested 6,000 levels deep with 400 naming the depth limit', async () => {
    const res = await post('/v1/runs/node', `{"node":"text-regex-replace","inputs":{"text":{"value":${nested(6000)}}}}`);
    await expect4xx(res, 400, /nested.*64/);
    const inWorkflow = await post('/v1/runs', `{"workflow":{"version":2,"nodes":[{"id":"a","uses":"json-stringify","inputs":{"value":${nested(6000)}}}]}}`);
    await expect4xx(inWorkflow, 400, /nested.*64/);
  });

  describe('runs.node inputs given the wrong object', () => {
    it('names the bad ref of an artifact, and says what an artifact looks like', async () => {
      const res = await post('/v1/runs/node', JSON.stringify({ node: 'image-resize', inputs: { image: { kind: 'image', ref: 'not a url' }, width: 10 } }));
      const body = await expect4xx(res, 400, /inputs\.image\.ref must be a valid uri/);
      expect(body.error).toContain('{"kind":"image","ref":"https://…"}');
      expect(body.error).not.toContain('got object');
    });

    it('tells a caller who gives a STRUCTURED port a bare object to wrap it as {"kind":"structured","value":…}', async () => {
      const res = await post('/v1/runs/node', JSON.stringify({ node: 'json-extract', inputs: { data: { a: 1 }, path: 'a' } }));
      const body = await expect4xx(res, 400, /\{"kind":"structured","value":…\}/);
      expect(body.error).toContain('unknown field "a" in inputs.data');
    });

    it('hands a STRUCTURED port the value inside {"kind":"structured","value":…}, not the envelope', async () => {
      const res = await post('/v1/runs/node', JSON.stringify({ node: 'json-extract', inputs: { data: { kind: 'structured', value: { a: { b: 7 } } }, path: 'a.b' } }));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ outputs: { value: { kind: 'structured', value: 7 } } });
    });
  });

  describe('bodies that are not JSON objects', () => {
    it.each(['true', '-1', 'null', '"text"'])('says the body %s must be a JSON object', async (body) => {
      const res = await post('/v1/runs/node', body);
      const answer = await expect4xx(res, 400, /must be a JSON object/);
      expect(answer.error).not.toMatch(/not valid JSON/);
    });

    it('says a body declared gzip that is not gzip is not gzip', async () => {
      const res = await rawPost(`${service.url}/v1/runs/node`, { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, Buffer.from('{"node":"x","inputs":{}}'));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/Content-Encoding "gzip".*not/);
    });

    it('says a gzip bomb is a compressed body over the limit once inflated', async () => {
      const bomb = zlib.gzipSync(Buffer.from(`{"node":"x","inputs":{"text":"${'a'.repeat(service.config.bodyLimitBytes + 1000)}"}}`));
      expect(bomb.length).toBeLessThan(service.config.bodyLimitBytes);
      const res = await rawPost(`${service.url}/v1/runs/node`, { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, bomb);
      expect(res.status).toBe(413);
      expect(res.body.error).toMatch(/compressed.*inflated.*limit/);
    });
  });

  describe('input URLs in special-purpose address forms', () => {
    let hits = 0;
    let canary: http.Server;
    let port = 0;

    beforeAll(async () => {
      canary = http.createServer((_req, res) => {
        hits += 1;
        res.end('canary');
      });
      // On every address: an IPv4-compatible or -translated form must not reach it by any route.
      await new Promise<void>((resolve) => canary.listen(0, '::', resolve));
      port = (canary.address() as AddressInfo).port;
    });

    afterAll(async () => {
      canary.closeAllConnections();
      await new Promise((resolve) => canary.close(resolve));
    });

    it.each([
      ['[::127.0.0.1]', 'IPv4-compatible'],
      ['[::ffff:0:127.0.0.1]', 'IPv4-translated'],
      ['192.0.2.1', 'documentation'],
      ['[2001:db8::1]', 'documentation'],
    ])('refuses http://%s without connecting, naming it %s', async (host, words) => {
      const err = await safeFetch(`http://${host}:${port}/x.png`, { maxBytes: 1024, timeoutMs: 2000 }).then(
        () => null,
        (e: unknown) => e as { code?: string; message?: string },
      );
      expect(err).toMatchObject({ code: 'validation_failed', message: expect.stringContaining(words) });
      expect(hits).toBe(0);
    });
  });
});
