import type { Server } from 'node:http';
import request from 'supertest';
import { Redis } from 'ioredis';
import { createApp, createHandlers, listen, type ReadinessProbe, type RunningServer } from '../../services/api';
import { Type } from '@sinclair/typebox';
import { NodeSpecSchema, validate } from '../../services/contract';
import { createCatalog, createNodeCatalog, type NodeCatalog } from '../../services/nodes';
import { createLogger } from '../../services/platform/logger';
import { createMetrics } from '../../services/platform/metrics';
import { createPrismaClient, TokenRepository, WorkflowRepository } from '../../services/store';
import { createTestDatabase } from '../support/database';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { stack } from '../support/stack';

const validRun = { workflow: { version: 2, nodes: [{ id: 'p', uses: 'input', outputType: 'TEXT' }, { id: 'o', uses: 'output', inputs: { value: '${p.value}' } }] } };

/**
 * An app for tests that need no accounts: every token is unknown (a real lookup that finds
 * nothing would answer the same), so only public routes and readiness are exercised.
 */
function appWithoutAccounts(options: { catalog: NodeCatalog; probes: ReadinessProbe[] }) {
  return createApp({
    handlers: createHandlers({ catalog: options.catalog }),
    tokens: { findByHash: async () => null },
    log: createLogger({ level: 'silent' }),
    metrics: createMetrics({ role: 'test' }),
    probes: options.probes,
    bodyLimitBytes: 4096,
    trustProxy: false,
    publicBaseUrl: 'http://svc.test',
  });
}

describe('HTTP skeleton over a real Postgres and Redis', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let prisma: ReturnType<typeof createPrismaClient>;
  let redis: Redis;
  let running: RunningServer;
  let server: Server;
  let runner: SeededAccount;
  let reader: SeededAccount;

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres, stack().templateDatabase);
    prisma = createPrismaClient(db.url);
    redis = new Redis(stack().redisUrl, { lazyConnect: true });
    await redis.connect();
    const app = createApp({
      handlers: createHandlers({ catalog: createCatalog([]), workflows: { published: new WorkflowRepository(prisma) } }),
      tokens: new TokenRepository(prisma),
      log: createLogger({ level: 'silent' }),
      metrics: createMetrics({ role: 'test' }),
      probes: [
        { name: 'redis', check: async () => void (await redis.ping()) },
        { name: 'postgres', check: async () => void (await prisma.$queryRaw`SELECT 1`) },
      ],
      bodyLimitBytes: 4096,
      trustProxy: false,
      publicBaseUrl: 'http://127.0.0.1',
    });
    running = await listen(app, '127.0.0.1', 0);
    server = running.server;
    runner = await seedAccount(prisma, { slug: 'acme', scopes: ['read', 'run'] });
    reader = await seedAccount(prisma, { slug: 'readers', scopes: ['read'] });
  });

  afterAll(async () => {
    await running?.close(100);
    redis?.disconnect();
    await prisma?.$disconnect();
    await db?.drop();
  });

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  it('serves the node catalog without a token, at /v1 and under /api', async () => {
    const plain = await request(server).get('/v1/nodes').expect(200);
    expect(plain.headers['content-type']).toMatch(/application\/json/);
    expect(plain.body).toEqual([]);
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

  it('answers operations an app was built without with a JSON 501, never a crash', async () => {
    const res = await request(server).post('/v1/runs').set(bearer(runner.token)).send(validRun).expect(501);
    expect(res.body).toMatchObject({ code: 'not_implemented', error: 'runs.create is not implemented by this server yet' });
    await request(server).post('/api/v1/runs/node').set(bearer(runner.token)).send({ node: 'x', inputs: {} }).expect(501);
  });

  it('answers workflows.get for an address nothing is published at with a JSON 404', async () => {
    const res = await request(server).get('/v1/workflows/acme%2Fflow').set(bearer(reader.token)).expect(404);
    expect(res.body).toEqual({ code: 'not_found', error: expect.stringContaining('no published workflow version matches "acme/flow"') });
  });

  it('answers unknown routes with a JSON 404 and wrong methods with 405 and Allow', async () => {
    const unknown = await request(server).get('/v2/nodes').expect(404);
    expect(unknown.body).toEqual({ code: 'not_found', error: expect.stringContaining('no route for GET /v2/nodes') });
    const wrong = await request(server).delete('/v1/runs').set(bearer(runner.token)).expect(405);
    expect(wrong.headers.allow).toBe('POST');
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
  it('answers 503 naming the failing check', async () => {
    const deadRedis = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    deadRedis.on('error', () => undefined);
    const probe = { name: 'redis', check: async () => { await deadRedis.connect(); await deadRedis.ping(); } };
    const app = appWithoutAccounts({ catalog: createCatalog([]), probes: [probe] });
    const res = await request(app).get('/readyz').expect(503);
    expect(res.body.status).toBe('not_ready');
    expect(res.body.checks.redis).toMatch(/^failing: /);
    deadRedis.disconnect();
  });
});

describe('the OpenAPI document route', () => {
  it('is served at /v1/openapi.json and /api/v1/openapi.json', async () => {
    const app = appWithoutAccounts({ catalog: createCatalog([]), probes: [] });
    const res = await request(app).get('/api/v1/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.servers).toEqual([{ url: 'http://svc.test' }]);
    expect(Object.keys(res.body.paths)).toEqual(['/v1/nodes', '/v1/nodes/{id}', '/v1/workflows/{id}', '/v1/runs', '/v1/runs/node']);
  });
});

describe('the node catalog over HTTP', () => {
  const app = appWithoutAccounts({ catalog: createNodeCatalog(), probes: [] });

  it('searches by q with a limit and answers specs the contract accepts', async () => {
    const res = await request(app).get('/v1/nodes?q=RESIZE&limit=5').expect(200);
    expect(res.body.map((s: { id: string }) => s.id)).toEqual(['image-resize']);
    expect(validate(Type.Array(NodeSpecSchema), res.body).ok).toBe(true);
    const images = await request(app).get('/v1/nodes?category=image&limit=2').expect(200);
    expect(images.body).toHaveLength(2);
  });

  it('returns one node with its full port map: defaults, option values and bounds', async () => {
    const res = await request(app).get('/v1/nodes/image-resize').expect(200);
    expect(res.body.inputs.fit.connector).toMatchObject({ id: 'TEXT', defaultValue: 'cover', optionValues: ['cover', 'contain', 'fill', 'inside', 'outside'] });
    expect(res.body.inputs.width.connector).toMatchObject({ id: 'INT', minValue: 1, maxValue: 8192 });
  });
});
