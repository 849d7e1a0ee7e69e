import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { listen, type RunningServer } from '../../services/api';
import { redisCalls, type RedisCall } from '../../services/platform/call-channels';
import { createRedisConnection, StreamLeases } from '../../services/queue';
import { RunRepository } from '../../services/store';
import { eventually, stillTrueFor } from '../support/eventually';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { stack, uniqueName } from '../support/stack';

const sum = { workflow: { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } }, { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } }] } };

/** A second API replica of the service: its own runtime (same database and Redis prefix) and listener. */
async function secondApi(service: TestService, servers: RunningServer[], overrides: Record<string, string> = {}): Promise<string> {
  const runtime = await service.extra({ ROLE: 'api', ...overrides });
  const server = await listen(runtime.app!, '127.0.0.1', 0, service.config.http);
  servers.push(server);
  return server.url;
}

function rateHeaders(res: Response): { limit: string | null; remaining: string | null; reset: string | null } {
  return { limit: res.headers.get('ratelimit-limit'), remaining: res.headers.get('ratelimit-remaining'), reset: res.headers.get('ratelimit-reset') };
}

function expectSeconds(value: string | null, max: number): void {
  expect(value).toMatch(/^\d+$/);
  expect(Number(value)).toBeGreaterThanOrEqual(1);
  expect(Number(value)).toBeLessThanOrEqual(max);
}

describe('request rate limits shared by two API replicas on one Redis', () => {
  let service: TestService;
  let urls: [string, string];
  const servers: RunningServer[] = [];
  let nextIp = 0;
  /** A client address of its own for each test (TRUST_PROXY is on, so X-Forwarded-For names it). */
  const freshIp = () => `10.0.${Math.floor(++nextIp / 250)}.${nextIp % 250}`;
  const from = (ip: string, headers: Record<string, string> = {}) => ({ headers: { 'X-Forwarded-For': ip, ...headers } });
  const account = () => seedAccount(service.prisma, { slug: 'limited', scopes: ['read', 'run'], balanceMicros: 10_000_000 });

  beforeAll(async () => {
    service = await startTestService({
      env: { RATE_LIMIT_TOKEN_PER_MINUTE: '5', RATE_LIMIT_IP_PER_MINUTE: '8', TRUST_PROXY: 'true', BODY_LIMIT_BYTES: '4096' },
    });
    urls = [service.url, await secondApi(service, servers)];
  });

  afterAll(async () => {
    for (const server of servers) await server.close(0);
    await service?.close();
  });

  it("spends one token's budget across both replicas, then refuses it on either with 429, Retry-After and RateLimit-*", async () => {
    const caller = await account();
    const ip = freshIp();
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${urls[i % 2]}/v1/runs`, from(ip, bearer(caller.token)));
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('5');
      remaining.push(res.headers.get('ratelimit-remaining'));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);

    for (const url of urls) {
      const res = await fetch(`${url}/v1/runs`, from(ip, bearer(caller.token)));
      expect(res.status).toBe(429);
      expectSeconds(res.headers.get('retry-after'), 60);
      const headers = rateHeaders(res);
      expect(headers.limit).toBe('5');
      expect(headers.remaining).toBe('0');
      expectSeconds(headers.reset, 60);
      const body = (await res.json()) as { error: string };
      expect(body).toMatchObject({ code: 'rate_limited', limit: 'token', retryAfterSeconds: Number(res.headers.get('retry-after')) });
      expect(body.error).toMatch(/too many requests from this access token: the limit is 5 per minute; retry in \d+ s/);
    }

    // Another token of the same organization has a budget of its own.
    const other = await seedAccount(service.prisma, { slug: 'other', scopes: ['run'] });
    expect((await fetch(`${urls[1]}/v1/runs`, from(ip, bearer(other.token)))).status).toBe(200);
  });

  it('limits one client address, anonymous or not, on both replicas; other addresses are not affected', async () => {
    const ip = freshIp();
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${urls[i % 2]}/v1/nodes`, from(ip));
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toMatchObject({ limit: '8', remaining: String(7 - i) });
    }
    const caller = await account();
    for (const [url, headers] of [[urls[0], {}], [urls[1], bearer(caller.token)]] as const) {
      const res = await fetch(`${url}/v1/nodes`, from(ip, headers));
      expect(res.status).toBe(429);
      expectSeconds(res.headers.get('retry-after'), 60);
      expect(rateHeaders(res)).toMatchObject({ limit: '8', remaining: '0' });
      const body = (await res.json()) as { error: string };
      expect(body).toMatchObject({ code: 'rate_limited', limit: 'ip' });
      expect(body.error).toMatch(/too many requests from your IP address: the limit is 8 per minute; retry in \d+ s/);
    }
    expect((await fetch(`${urls[0]}/v1/nodes`, from(freshIp()))).status).toBe(200);
  });

  it('reports the limit closest to running out on every response, errors and streams included', async () => {
    const caller = await account();
    const ip = freshIp();
    // Token 5 per minute, address 8: the token's is reported.
    const missing = await fetch(`${urls[0]}/v1/runs/00000000-0000-4000-8000-000000000000`, from(ip, bearer(caller.token)));
    expect(missing.status).toBe(404);
    expect(rateHeaders(missing)).toMatchObject({ limit: '5', remaining: '4' });
    expectSeconds(rateHeaders(missing).reset, 60);

    const stream = await fetch(`${urls[1]}/v1/runs`, { method: 'POST', body: JSON.stringify(sum), ...from(ip, bearer(caller.token)) });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(rateHeaders(stream)).toMatchObject({ limit: '5', remaining: '3' });
    expect((await readSse(stream)).at(-1)?.data).toBe('[DONE]');

    // Anonymous: the address's limit.
    expect(rateHeaders(await fetch(`${urls[0]}/v1/nodes`, from(ip)))).toMatchObject({ limit: '8', remaining: '5' });
    expect(rateHeaders(await fetch(`${urls[1]}/v1/nodes`, from(ip)))).toMatchObject({ limit: '8', remaining: '4' });
    // A new token (4 left after this call) from an address with 3 left: the address's is closer.
    const fresh = await account();
    const closer = await fetch(`${urls[0]}/v1/runs`, from(ip, bearer(fresh.token)));
    expect(rateHeaders(closer)).toMatchObject({ limit: '8', remaining: '3' });
  });

  it("counts a call of a token the replica already knows with its address' count, so a call its address is refused is a call of the token", async () => {
    const lookups = async () => (await service.metrics.tokenLookups.get()).values.find((v) => v.labels.result === 'hit')?.value ?? 0;
    // Until the replica's token cache serves (its listener subscribes in the background at start).
    const warm = await account();
    await eventually(async () => {
      const before = await lookups();
      await fetch(`${urls[0]}/v1/me`, from(freshIp(), bearer(warm.token)));
      return (await lookups()) > before;
    }, { what: 'a token lookup answered from the cache' });

    const caller = await account();
    const [address, elsewhere] = [freshIp(), freshIp()];
    expect(rateHeaders(await fetch(`${urls[0]}/v1/runs`, from(elsewhere, bearer(caller.token))))).toMatchObject({ limit: '5', remaining: '4' });
    for (let i = 0; i < 7; i++) expect((await fetch(`${urls[0]}/v1/nodes`, from(address))).status).toBe(200);
    const last = await fetch(`${urls[0]}/v1/runs`, from(address, bearer(caller.token)));
    expect(last.status).toBe(200);
    expect(rateHeaders(last)).toMatchObject({ limit: '8', remaining: '0' });
    const refused = await fetch(`${urls[0]}/v1/runs`, from(address, bearer(caller.token)));
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'rate_limited', limit: 'ip' });
    // Four calls of the token: the refused one among them.
    expect(rateHeaders(await fetch(`${urls[0]}/v1/runs`, from(elsewhere, bearer(caller.token))))).toMatchObject({ limit: '5', remaining: '1' });

    // A token the replica has not seen is counted once the caller is known: a call refused before is not one of its calls.
    const stranger = await account();
    expect((await fetch(`${urls[0]}/v1/runs`, from(address, bearer(stranger.token)))).status).toBe(429);
    expect(rateHeaders(await fetch(`${urls[0]}/v1/runs`, from(elsewhere, bearer(stranger.token))))).toMatchObject({ limit: '5', remaining: '4' });
  });

  it('never limits health checks and metric scrapes, at the root or under /api', async () => {
    const ip = freshIp();
    for (let i = 0; i < 12; i++) {
      for (const path of ['/healthz', '/readyz', '/metrics', '/api/healthz']) {
        const res = await fetch(`${urls[i % 2]}${path}`, from(ip));
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBeNull();
      }
    }
    const metrics = await (await fetch(`${urls[0]}/metrics`, from(ip))).text();
    expect(metrics).toMatch(/svc_rate_limited_total\{limit="token",role="test"\} [1-9]/);
    expect(metrics).toMatch(/svc_rate_limited_total\{limit="ip",role="test"\} [1-9]/);
  });

  it('answers a body over BODY_LIMIT_BYTES with 413, with or without Content-Length, and creates no run', async () => {
    const caller = await account();
    const big = JSON.stringify({ ...sum, inputs: { pad: 'x'.repeat(5000) } });
    const sized = await fetch(`${urls[0]}/v1/runs`, { method: 'POST', body: big, ...from(freshIp(), bearer(caller.token)) });
    expect(sized.status).toBe(413);
    expect(await sized.json()).toEqual({ code: 'payload_too_large', error: expect.stringContaining('the limit is 4096 bytes') });

    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new TextEncoder().encode(big.slice(i * 1000, (i + 1) * 1000)));
        controller.enqueue(new TextEncoder().encode(big.slice(5000)));
        controller.close();
      },
    });
    const chunked = await fetch(`${urls[1]}/v1/runs`, { method: 'POST', body: chunks, duplex: 'half', ...from(freshIp(), bearer(caller.token)) } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { code: string }).code).toBe('payload_too_large');
    expect(await service.prisma.run.count({ where: { orgId: caller.orgId } })).toBe(0);
  });

  it('turns a limit off with 0: a replica without limits sends no RateLimit-* and never refuses', async () => {
    const unlimited = await secondApi(service, servers, { RATE_LIMIT_TOKEN_PER_MINUTE: '0', RATE_LIMIT_IP_PER_MINUTE: '0' });
    const tokenOnly = await secondApi(service, servers, { RATE_LIMIT_IP_PER_MINUTE: '0' });
    const caller = await account();
    const ip = freshIp();
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${unlimited}/v1/runs`, from(ip, bearer(caller.token)));
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
    }
    // The address limit off, the token's on: anonymous calls go unlimited, the token is still counted.
    for (let i = 0; i < 12; i++) expect((await fetch(`${tokenOnly}/v1/nodes`, from(ip))).status).toBe(200);
    const second = await account();
    for (let i = 0; i < 5; i++) expect((await fetch(`${tokenOnly}/v1/runs`, from(ip, bearer(second.token)))).status).toBe(200);
    expect((await fetch(`${tokenOnly}/v1/runs`, from(ip, bearer(second.token)))).status).toBe(429);
  });
});

describe('open run streams per organization across two API replicas', () => {
  let service: TestService;
  let urls: [string, string];
  const servers: RunningServer[] = [];
  const held: AbortController[] = [];

  beforeAll(async () => {
    service = await startTestService({ env: { MAX_OPEN_STREAMS_PER_ORG: '2' } });
    urls = [service.url, await secondApi(service, servers)];
  });

  afterEach(() => {
    for (const controller of held.splice(0)) controller.abort();
  });

  afterAll(async () => {
    for (const server of servers) await server.close(0);
    await service?.close();
  });

  const account = () => seedAccount(service.prisma, { slug: 'streams', scopes: ['read', 'run'], balanceMicros: 10_000_000 });

  /** A run that stays running (its steps are never enqueued), so its event stream stays open. */
  function runningRun(owner: SeededAccount): Promise<string> {
    return new RunRepository(service.database).createRun({
      orgId: owner.orgId, userId: owner.userId, tokenId: owner.tokenId, definition: { version: 2, nodes: [] }, inputs: {}, capMicros: 100_000, start: true, steps: [],
    });
  }

  /** Opens the event stream of a run and keeps it open (closed after the test). */
  async function hold(url: string, owner: SeededAccount, runId: string): Promise<Response> {
    const controller = new AbortController();
    held.push(controller);
    return fetch(`${url}/v1/runs/${runId}/events`, { headers: bearer(owner.token), signal: controller.signal });
  }

  const startRun = (url: string, owner: SeededAccount) =>
    fetch(`${url}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify(sum) });
  const runCount = (owner: SeededAccount) => service.prisma.run.count({ where: { orgId: owner.orgId } });

  it('refuses the stream after the limit with 429 on either replica, before any run is created', async () => {
    const owner = await account();
    const runId = await runningRun(owner);
    expect((await hold(urls[0], owner, runId)).status).toBe(200);
    expect((await hold(urls[1], owner, runId)).status).toBe(200);

    for (const url of urls) {
      const refused = await startRun(url, owner);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('5');
      const body = (await refused.json()) as { error: string };
      expect(body).toMatchObject({ code: 'rate_limited', limit: 'open_streams' });
      expect(body.error).toContain('already has 2 run streams open');
    }
    expect(await runCount(owner)).toBe(1);
    // A replay stream and runs.node (which waits for its run) need a slot too.
    expect((await fetch(`${urls[1]}/v1/runs/${runId}/events`, { headers: bearer(owner.token) })).status).toBe(429);
    const node = await fetch(`${urls[0]}/v1/runs/node`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify({ node: 'any-model', inputs: {} }) });
    expect(node.status).toBe(429);

    // Another organization is not affected.
    const other = await account();
    const stream = await startRun(urls[0], other);
    expect(stream.status).toBe(200);
    expect((await readSse(stream)).at(-1)?.data).toBe('[DONE]');

    const metrics = await (await fetch(`${urls[0]}/metrics`)).text();
    expect(metrics).toMatch(/svc_rate_limited_total\{limit="open_streams",role="test"\} [1-9]/);
  });

  it('frees a slot when a client closes its stream, and when a stream ends', async () => {
    const owner = await account();
    const runId = await runningRun(owner);
    await hold(urls[0], owner, runId);
    await hold(urls[1], owner, runId);
    expect((await startRun(urls[0], owner)).status).toBe(429);

    held.shift()!.abort();
    let stream: Response | undefined;
    await eventually(async () => (stream = await startRun(urls[1], owner)).status === 200, { what: 'a closed stream to give its slot back' });
    expect((await readSse(stream!)).at(-1)?.data).toBe('[DONE]');

    // The finished run's stream gave its slot back too: one more stream fits, the next does not.
    await eventually(async () => (await hold(urls[0], owner, runId)).status === 200, { what: 'a finished stream to give its slot back' });
    expect((await startRun(urls[1], owner)).status).toBe(429);
    expect(await runCount(owner)).toBe(2);
  });

  it('holds no slot for a call refused for its input or its scope (the slot is taken last, once the body is read and valid)', async () => {
    const owner = await account();
    const readOnly = await seedAccount(service.prisma, { slug: 'streams-read', scopes: ['read'] });
    await service.prisma.accessToken.update({ where: { id: readOnly.tokenId! }, data: { orgId: owner.orgId } });
    for (let i = 0; i < 5; i++) {
      const invalid = await fetch(`${urls[i % 2]}/v1/runs`, { method: 'POST', headers: bearer(owner.token), body: JSON.stringify({ workflow: { version: 2, nodes: 'none' } }) });
      expect(invalid.status).toBe(400);
      expect((await startRun(urls[i % 2], readOnly)).status).toBe(403);
    }
    // Clients still sending their bodies hold no slot either (a slow body must not starve the
    // organization's streams): three trickling a body, and a run still starts.
    const trickling = await Promise.all(
      [0, 1, 2].map(async () => {
        const { hostname, port } = new URL(urls[0]!);
        const socket = net.connect(Number(port), hostname);
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
        socket.write(['POST /v1/runs HTTP/1.1', `Host: ${hostname}`, `Authorization: Bearer ${owner.token}`, 'Content-Type: application/json', 'Content-Length: 1000', '', '{'].join('\r\n'));
        return socket;
      }),
    );
    const leases = createRedisConnection(stack().redisUrl);
    try {
      const held = () => leases.zcard(`${service.config.redisPrefix}:stream-leases:${owner.orgId}`);
      await stillTrueFor(async () => (await held()) === 0, 500, { what: 'no stream slot held by a client still sending its body' });
      const started = await startRun(urls[0]!, owner);
      expect(started.status).toBe(200);
      expect((await readSse(started)).at(-1)?.data).toBe('[DONE]');
    } finally {
      for (const socket of trickling) socket.destroy();
      leases.disconnect();
    }
    // Both slots free: two streams open, a third is refused.
    const runId = await runningRun(owner);
    await eventually(async () => (await hold(urls[0], owner, runId)).status === 200, { what: 'the first slot' });
    expect((await hold(urls[1], owner, runId)).status).toBe(200);
    expect((await hold(urls[0], owner, runId)).status).toBe(429);
  });
});

describe('stream leases in Redis', () => {
  const redis = createRedisConnection(stack().redisUrl);
  const prefix = uniqueName('leases');

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("stops counting the leases of a replica that died, once they expire", async () => {
    const dead = new StreamLeases({ redis, prefix, leaseMs: 300, renewMs: 60_000 });
    const live = new StreamLeases({ redis, prefix });
    expect(await dead.acquire('org', 2)).not.toBeNull();
    expect(await dead.acquire('org', 2)).not.toBeNull();
    expect(await live.acquire('org', 2)).toBeNull();
    // Never renewed nor given back (its process is gone): free again after 300 ms.
    await eventually(async () => (await live.acquire('org', 2)) !== null, { what: "the dead replica's leases to expire" });
    await live.close();
    await dead.close();
  });

  it('keeps a lease held longer than its lifetime while its replica renews it; release frees it', async () => {
    const leases = new StreamLeases({ redis, prefix, leaseMs: 300, renewMs: 50 });
    const lease = await leases.acquire('renewed', 1);
    expect(lease).not.toBeNull();
    await stillTrueFor(async () => (await leases.acquire('renewed', 1)) === null, 900, { what: 'the renewed lease holding its slot' });
    lease!.release();
    lease!.release();
    await eventually(async () => (await leases.acquire('renewed', 1)) !== null, { what: 'the released lease to be gone' });
    await leases.close();
    expect(await redis.zcard(`${prefix}:stream-leases:renewed`)).toBe(0);
  });

  it("hands a given-back lease to its replica's next stream of the group without a call to Redis; the other replicas find the slot held throughout", async () => {
    // No timer to remove it: the lease stays in Redis until handed on or closed.
    const leases = new StreamLeases({ redis, prefix, releaseDelayMs: 60_000 });
    const other = new StreamLeases({ redis, prefix });
    const key = `${prefix}:stream-leases:handed-on`;
    const first = await leases.acquire('handed-on', 1);
    expect(first).not.toBeNull();
    const [id] = await redis.zrange(key, 0, -1);
    first!.release();
    expect(await other.acquire('handed-on', 1)).toBeNull();
    const commands: string[] = [];
    const onCommand = (message: unknown) => commands.push((message as RedisCall).command);
    redisCalls.subscribe(onCommand);
    const second = await leases.acquire('handed-on', 1);
    redisCalls.unsubscribe(onCommand);
    expect(second).not.toBeNull();
    expect(commands).toEqual([]);
    expect(await redis.zrange(key, 0, -1)).toEqual([id]);
    expect(await other.acquire('handed-on', 1)).toBeNull();
    // Handed on once, released once: the third take finds it given back again.
    second!.release();
    second!.release();
    expect(await leases.acquire('handed-on', 1)).not.toBeNull();
    expect(await leases.acquire('handed-on', 1)).toBeNull();
    await leases.close();
    await other.close();
    expect(await redis.zcard(key)).toBe(0);
  });

  it("removes a given-back lease it cannot hand on (taken over half a lifetime ago, or under a higher limit) with its replica's next take, in the same call", async () => {
    const leases = new StreamLeases({ redis, prefix, leaseMs: 400, renewMs: 60_000, releaseDelayMs: 60_000 });
    const key = `${prefix}:stream-leases:not-handed-on`;
    const old = await leases.acquire('not-handed-on', 1);
    expect(old).not.toBeNull();
    const [oldId] = await redis.zrange(key, 0, -1);
    await sleep(250);
    old!.release();
    const next = await leases.acquire('not-handed-on', 1);
    expect(next).not.toBeNull();
    const ids = await redis.zrange(key, 0, -1);
    expect(ids).toHaveLength(1);
    expect(ids[0]).not.toBe(oldId);
    // Taken under a limit of 2 and given back, asked for under a limit of 1: the count is checked
    // again (the other lease, handed on from a limit of 1 to 2, holds the one slot left).
    next!.release();
    const wide = [await leases.acquire('not-handed-on', 2), await leases.acquire('not-handed-on', 2)];
    expect(wide).not.toContain(null);
    wide[1]!.release();
    expect(await leases.acquire('not-handed-on', 1)).toBeNull();
    expect(await redis.zcard(key)).toBe(1);
    await leases.close();
    expect(await redis.zcard(key)).toBe(0);
  });

  it('removes a given-back lease after the release delay when no take of its group comes', async () => {
    const leases = new StreamLeases({ redis, prefix, releaseDelayMs: 30 });
    const other = new StreamLeases({ redis, prefix });
    const lease = await leases.acquire('idle-group', 1);
    expect(lease).not.toBeNull();
    lease!.release();
    await eventually(async () => (await redis.zcard(`${prefix}:stream-leases:idle-group`)) === 0, { what: 'the removal sent by the timer' });
    expect(await other.acquire('idle-group', 1)).not.toBeNull();
    await leases.close();
    await other.close();
  });
});
