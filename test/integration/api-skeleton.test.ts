import request from 'supertest';
import { OPERATIONS, ROUTES } from '../../services/contract';
import type { PrismaClient } from '../../services/store';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { startPrivateServers, type PrivateServers } from '../support/private-servers';
import { startTestService, type TestService } from '../support/service';

const validRun = { workflow: { version: 2, nodes: [{ id: 'p', uses: 'input', outputType: 'TEXT' }, { id: 'o', uses: 'output', inputs: { value: '${p.value}' } }] } };

describe('HTTP skeleton over a real Postgres and Redis', () => {
  let service: TestService;
  let prisma: PrismaClient;
  let server: string;
  let runner: SeededAccount;
  let reader: SeededAccount;

  beforeAll(async () => {
    // The whole API, built by the production composition root, with a small body limit.
    service = await startTestService({ env: { ROLE: 'api', BODY_LIMIT_BYTES: '4096' } });
    prisma = service.prisma;
    server = service.url;
    runner = await seedAccount(prisma, { slug: 'acme', scopes: ['read', 'run'] });
    reader = await seedAccount(prisma, { slug: 'readers', scopes: ['read'] });
  });

  afterAll(async () => {
    await service?.close();
  });

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  it('serves the node catalog without a token, at /v1 and under /api', async () => {
    const plain = await request(server).get('/v1/nodes').expect(200);
    expect(plain.headers['content-type']).toMatch(/application\/json/);
    expect(plain.body.length).toBeGreaterThan(0);
    const prefixed = await request(server).get('/api/v1/nodes').expect(200);
    expect(prefixed.body).toEqual(plain.body);
  });

  it('answers an unknown node with a JSON 404 that says how to find nodes', async () => {
    const res = await request(server).get('/v1/nodes/nope%2Fmissing').expect(404);
    expect(res.body).toEqual({ code: 'not_found', error: expect.stringContaining('no node with id "nope/missing"') });
  });

  it('rejects a bad limit on nodes.list with a message naming it', async () => {
    const res = await request(server).get('/v1/nodes?limit=abc').expect(400);
    expect(res.body.error).toContain('limit must be integer');
    expect((await request(server).get('/v1/nodes?limit=0').expect(400)).body.error).toContain('limit must be >= 1');
    expect((await request(server).get('/v1/nodes?colour=red').expect(400)).body.error).toContain('unknown field "colour"');
  });

  it('answers invalid JSON with 400, whatever the content type', async () => {
    for (const type of ['application/json', 'application/x-www-form-urlencoded']) {
      const res = await request(server).post('/v1/runs').set(bearer(runner.token)).set('Content-Type', type).send('{bad json').expect(400);
      expect(res.body).toEqual({ code: 'invalid_json', error: expect.stringContaining('not valid JSON') });
    }
    const empty = await request(server).post('/v1/runs').set(bearer(runner.token)).expect(400);
    expect(empty.body.error).toContain('request body is empty');
  });

  it('answers an unknown field with 400 naming the field', async () => {
    const res = await request(server).post('/v1/runs').set(bearer(runner.token)).send({ ...validRun, priority: 'high' }).expect(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.error).toContain('unknown field "priority"');
    expect(res.body.issues).toEqual([expect.objectContaining({ path: 'priority' })]);
  });

  it('answers a body over the limit with 413 giving the limit', async () => {
    const big = { ...validRun, inputs: { p: { value: 'x'.repeat(10_000) } } };
    const res = await request(server).post('/v1/runs').set(bearer(runner.token)).send(big).expect(413);
    expect(res.body).toEqual({ code: 'payload_too_large', error: expect.stringContaining('the limit is 4096 bytes') });
  });

  it('needs a token on protected routes and says why one is refused', async () => {
    const missing = await request(server).post('/v1/runs').send(validRun).expect(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expect(missing.body.error).toContain('runs.create needs an access token');

    const form = await request(server).post('/v1/runs').set('Authorization', `Token ${runner.token}`).send(validRun).expect(401);
    expect(form.body.error).toContain('must have the form "Bearer <access token>"');

    const typo = runner.token.slice(0, -3) + (runner.token.endsWith('aaa') ? 'bbb' : 'aaa');
    expect((await request(server).post('/v1/runs').set(bearer(typo)).send(validRun).expect(401)).body.error).toContain('checksum does not match');
    expect((await request(server).post('/v1/runs').set(bearer('sk-123')).send(validRun).expect(401)).body.error).toContain('known token prefix');

    const other = await seedAccount(prisma, { slug: 'ghost', scopes: ['run'], storeToken: false });
    expect((await request(server).post('/v1/runs').set(bearer(other.token)).send(validRun).expect(401)).body.error).toContain('is not known');

    const revoked = await seedAccount(prisma, { slug: 'revoked', scopes: ['run'], revokedAt: new Date(Date.now() - 1000) });
    expect((await request(server).post('/v1/runs').set(bearer(revoked.token)).send(validRun).expect(401)).body.error).toContain('was revoked');

    const expired = await seedAccount(prisma, { slug: 'expired', scopes: ['run'], expiresAt: new Date(Date.now() - 1000) });
    expect((await request(server).post('/v1/runs').set(bearer(expired.token)).send(validRun).expect(401)).body.error).toContain('expired at');

    expect((await request(server).get('/v1/workflows/acme%2Fflow').expect(401)).body.code).toBe('unauthorized');
  });

  it('serves the public catalog whatever token comes with the call, an unusable one ignored', async () => {
    await request(server).get('/v1/nodes').set(bearer(reader.token)).expect(200);
    await request(server).get('/v1/nodes').set(bearer('svc_broken')).expect(200);
  });

  it('answers 403 naming the missing scope when a read token tries to run', async () => {
    const res = await request(server).post('/v1/runs').set(bearer(reader.token)).send(validRun).expect(403);
    expect(res.body).toEqual({ code: 'insufficient_scope', error: expect.stringContaining('lacks the "run" scope') });
  });

  it('answers workflows.get for an address nothing is published at with a JSON 404', async () => {
    const res = await request(server).get('/v1/workflows/acme%2Fflow').set(bearer(reader.token)).expect(404);
    expect(res.body).toEqual({ code: 'not_found', error: expect.stringContaining('no published workflow version matches "acme/flow"') });
  });

  it('answers unknown routes with a JSON 404 and wrong methods with 405 and Allow', async () => {
    const unknown = await request(server).get('/v2/nodes').expect(404);
    expect(unknown.body).toEqual({ code: 'not_found', error: expect.stringContaining('no route for GET /v2/nodes') });
    const wrong = await request(server).delete('/v1/runs').set(bearer(runner.token)).expect(405);
    expect(wrong.headers.allow).toBe('POST, GET');
    expect(wrong.body.code).toBe('method_not_allowed');
  });

  it('reports liveness, readiness of Redis and Postgres, and metrics by route', async () => {
    await request(server).get('/healthz').expect(200, { status: 'ok' });
    const ready = await request(server).get('/readyz').expect(200);
    expect(ready.body).toEqual({ status: 'ready', checks: { redis: 'ok', postgres: 'ok' } });
    const metrics = await request(server).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/svc_http_requests_total\{method="GET",route="\/v1\/nodes",status="200",role="test"\} \d+/);
    expect(metrics.text).toContain('svc_http_request_duration_seconds_bucket');
    expect(metrics.text).toContain('process_cpu_seconds_total');
  });

  it('echoes a sane X-Request-Id and makes one up otherwise', async () => {
    const given = await request(server).get('/healthz').set('X-Request-Id', 'abc-123').expect(200);
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await request(server).get('/healthz').set('X-Request-Id', 'bad id with spaces').expect(200);
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('is still serving after every kind of bad request', async () => {
    await request(server).get('/healthz').expect(200);
    await request(server).get('/v1/nodes').expect(200);
  });
});

describe('readiness with a dependency down', () => {
  let servers: PrivateServers;
  let service: TestService;

  beforeAll(async () => {
    servers = await startPrivateServers();
    service = await startTestService({ postgres: servers.postgres, env: { ROLE: 'api', REDIS_URL: servers.redisUrl } });
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await servers?.close();
  });

  it('answers 503 naming the failing check', async () => {
    await servers.crashPostgres();
    try {
      const res = await request(service.url).get('/readyz').expect(503);
      expect(res.body.status).toBe('not_ready');
      expect(res.body.checks.postgres).toMatch(/^failing: /);
      expect(res.body.checks.redis).toBe('ok');
    } finally {
      // Back up before the service closes, so that closing finds the database it was built on.
      await servers.startPostgres();
    }
  });
});

describe('the OpenAPI document route', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { ROLE: 'api' } });
  });

  afterAll(async () => {
    await service?.close();
  });

  it('is served at /v1/openapi.json and /api/v1/openapi.json', async () => {
    const res = await request(service.url).get('/api/v1/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.servers).toEqual([{ url: service.url }]);
    const paths = [...Object.values(OPERATIONS), ...Object.values(ROUTES)].map((op) => op.http.path.replace(/:(\w+)/g, '{$1}'));
    expect(Object.keys(res.body.paths)).toEqual([...new Set(paths)]);
    expect((await request(service.url).get('/v1/openapi.json').expect(200)).body).toEqual(res.body);
  });
});
