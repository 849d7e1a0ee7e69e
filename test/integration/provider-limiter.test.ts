import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { redisCalls } from '../../services/platform/call-channels';
import { createRedisConnection, ProviderLimiter, type LimitGrant, type LimitRequest, type ProviderLimit } from '../../services/queue';
import { ProviderLimitStore } from '../../services/queue/provider-limit-store';
import { eventually, stillTrueFor } from '../support/eventually';
import { freePorts, startRedis, stopRedis } from '../support/local-servers';
import { stack, uniqueName } from '../support/stack';

const log = pino({ level: 'silent' });

/** A request of `org` under `key`, with its own abort controller. */
function request(key: string, org: string, over: Partial<LimitRequest> = {}): LimitRequest {
  return { key, org, tokens: 0, lease: false, signal: new AbortController().signal, ...over };
}

/** The limiter's Redis key for `key` and `suffix` (provider-limit-store.ts names them). */
const keyOf = (prefix: string, key: string, suffix: string) => `${prefix}:plim:${key.length}:${key}:${suffix}`;

/** A promise's outcome, readable without awaiting it. */
function track<T>(promise: Promise<T>): { settled: () => boolean; value: () => T | undefined; error: () => unknown } {
  let state: { done: boolean; value?: T; error?: unknown } = { done: false };
  promise.then(
    (value) => (state = { done: true, value }),
    (error: unknown) => (state = { done: true, error }),
  );
  return { settled: () => state.done, value: () => state.value, error: () => state.error };
}

describe('the provider limiter, shared through Redis', () => {
  const redis = createRedisConnection(stack().redisUrl);
  const prefix = uniqueName('plim');
  const limiters: ProviderLimiter[] = [];
  const connections: Redis[] = [];
  const limiter = (limits: ProviderLimit[], over: { leaseMs?: number; redis?: Redis } = {}) => {
    const made = new ProviderLimiter({ redis: over.redis ?? redis, prefix, limits, log, leaseMs: over.leaseMs });
    limiters.push(made);
    return made;
  };
  /** A limiter on a connection of its own, and a way to cut it off as if its process died. */
  const doomed = (limits: ProviderLimit[], leaseMs: number) => {
    const connection = createRedisConnection(stack().redisUrl);
    connections.push(connection);
    return { limiter: limiter(limits, { leaseMs, redis: connection }), kill: () => connection.disconnect() };
  };

  afterEach(async () => {
    await Promise.all(limiters.splice(0).map((l) => l.close()));
    for (const c of connections.splice(0)) c.disconnect();
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('spreads one rate over two processes: a burst of one, then the rest at the rate', async () => {
    const key = uniqueName('rate');
    const limits = [{ key, requestsPerMinute: 600 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    const started = Date.now();
    const times: number[] = [];
    const all = [a, b].flatMap((l, i) => Array.from({ length: 20 }, () => l.acquire(request(key, `org${i}`)).then(() => void times.push(Date.now() - started))));
    await Promise.all(all);
    expect(times).toHaveLength(40);
    // 10 a second with a burst of 1 (capacity 1/50 s of the rate, at least 1): the 40th grant cannot come before 3.9 s.
    expect(Math.max(...times)).toBeGreaterThanOrEqual(3900 - 100);
    for (const from of times) expect(times.filter((t) => t >= from && t < from + 1000).length).toBeLessThanOrEqual(10 + 1 + 1);
    expect(times.filter((t) => t < 300).length).toBeLessThanOrEqual(1 + 3 + 1);
  });

  it('grants a worst case above the capacity when the bucket is full, and a release with the real usage frees the budget', async () => {
    const key = uniqueName('tokens');
    // 1000 tokens a second, capacity 50: a 30 000-token worst case leaves 30 s of debt.
    const limits = [{ key, tokensPerMinute: 60_000 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    const big = await a.acquire(request(key, 'o', { tokens: 30_000 }));
    const next = track(b.acquire(request(key, 'o', { tokens: 10 })));
    await eventually(() => b.snapshot().find((s) => s.key === key)?.blockedBy === 'tokens', { what: 'the next request to wait for tokens' });
    expect(next.settled()).toBe(false);
    big.release(0);
    await eventually(() => next.settled(), { what: 'the next request to be granted after the correction' });
    expect(next.error()).toBeUndefined();
    const remaining = b.snapshot().find((s) => s.key === key)!.remaining.tokens!;
    expect(remaining).toBeLessThanOrEqual(50);
  });

  it('holds the concurrent-call limit across processes until a release', async () => {
    const key = uniqueName('calls');
    const limits = [{ key, concurrentCalls: 2 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    const held = await Promise.all([a.acquire(request(key, 'o', { lease: true })), a.acquire(request(key, 'o', { lease: true }))]);
    const third = track(b.acquire(request(key, 'o', { lease: true })));
    await eventually(() => b.snapshot().find((s) => s.key === key)?.blockedBy === 'calls', { what: 'the third call to wait' });
    expect(third.settled()).toBe(false);
    expect(a.snapshot().find((s) => s.key === key)!.inFlight).toBe(2);
    held[0]!.release();
    await eventually(() => third.settled(), { what: 'the third call to be granted' });
    expect(await redis.zcard(keyOf(prefix, key, 'l'))).toBe(2);
  });

  it('frees the slot of a process that stopped renewing after leaseMs', async () => {
    const key = uniqueName('lapse');
    const limits = [{ key, concurrentCalls: 1 }];
    const dead = doomed(limits, 600);
    await dead.limiter.acquire(request(key, 'o', { lease: true }));
    dead.kill();
    const live = limiter(limits, { leaseMs: 600 });
    const granted = track(live.acquire(request(key, 'o', { lease: true })));
    await eventually(() => granted.settled(), { what: 'the slot to come back', timeoutMs: 5000 });
    expect(granted.error()).toBeUndefined();
    expect(await redis.zcard(keyOf(prefix, key, 'l'))).toBe(1);
  });

  it('lets an organization that queued later take turns with one that queued a flood', async () => {
    const key = uniqueName('fair');
    const limits = [{ key, concurrentCalls: 1 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    const gate = await a.acquire(request(key, 'gate', { lease: true }));
    const order: string[] = [];
    const take = (l: ProviderLimiter, org: string) => l.acquire(request(key, org, { lease: true })).then((g) => (order.push(org), g.release()));
    const flood = Array.from({ length: 50 }, () => take(a, 'flood'));
    await eventually(async () => (await a.waitingOf('flood'))[0]?.waiting === 50, { what: 'the flood to be queued' });
    const late = Array.from({ length: 5 }, () => take(b, 'late'));
    await eventually(async () => (await b.waitingOf('late'))[0]?.waiting === 5, { what: 'the late organization to be queued' });
    expect(await b.waitingOf('late')).toEqual([{ key, waiting: 5, blockedBy: 'calls' }]);
    gate.release();
    await Promise.all([...flood, ...late]);
    expect(order).toHaveLength(55);
    expect(order.slice(0, 10).filter((o) => o === 'late')).toHaveLength(5);
  });

  it('withdraws an aborted request: rejected with its reason, never granted, nothing taken', async () => {
    const key = uniqueName('abort');
    const limits = [{ key, concurrentCalls: 1 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    const gate = await a.acquire(request(key, 'o', { lease: true }));
    const controller = new AbortController();
    const aborted = track(b.acquire(request(key, 'x', { lease: true, signal: controller.signal })));
    await eventually(async () => (await b.waitingOf('x'))[0]?.waiting === 1, { what: 'the request to be queued' });
    controller.abort(new Error('caller gave up'));
    await eventually(() => aborted.settled(), { what: 'the aborted request to reject' });
    expect((aborted.error() as Error).message).toBe('caller gave up');
    await eventually(async () => (await b.waitingOf('x'))[0]?.waiting === 0, { what: 'the ticket to leave the queue' });
    gate.release();
    const next = await b.acquire(request(key, 'y', { lease: true }));
    expect(await redis.zcard(keyOf(prefix, key, 'l'))).toBe(1);
    expect(b.snapshot().find((s) => s.key === key)!.inFlight).toBe(1);
    next.release();
  });

  it("drops a dead process's tickets instead of granting them", async () => {
    const key = uniqueName('dead');
    const limits = [{ key, concurrentCalls: 1 }];
    const live = limiter(limits, { leaseMs: 600 });
    const gate = await live.acquire(request(key, 'o', { lease: true }));
    const dead = doomed(limits, 600);
    const ghosts = Array.from({ length: 3 }, () => track(dead.limiter.acquire(request(key, 'ghost', { lease: true }))));
    await eventually(async () => (await live.waitingOf('ghost'))[0]?.waiting === 3, { what: 'the dead process to queue' });
    dead.kill();
    // The live process waits for nothing, so no alive mark is left once the dead one's lapses.
    await eventually(async () => (await redis.keys(keyOf(prefix, key, 'a:*'))).length === 0, { what: "the dead process's alive mark to lapse" });
    const next = track(live.acquire(request(key, 'o', { lease: true })));
    gate.release();
    await eventually(() => next.settled(), { what: 'the live request to be granted' });
    expect(next.error()).toBeUndefined();
    expect((await live.waitingOf('ghost'))[0]!.waiting).toBe(0);
    expect(ghosts.filter((g) => g.settled() && g.error() === undefined)).toHaveLength(0);
    expect(await redis.zcard(keyOf(prefix, key, 'l'))).toBe(1);
  });

  it('pauses every process, for keys with and without limits, until the pause ends', async () => {
    const limitedKey = uniqueName('paused');
    const openKey = uniqueName('open');
    const limits = [{ key: limitedKey, requestsPerMinute: 6000 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    const untilMs = Date.now() + 1200;
    await a.pause(limitedKey, untilMs);
    await a.pause(openKey, untilMs);
    const grantedAt: number[] = [];
    await Promise.all([b.acquire(request(limitedKey, 'o')), b.acquire(request(openKey, 'o'))].map((p) => p.then(() => grantedAt.push(Date.now()))));
    expect(grantedAt).toHaveLength(2);
    for (const at of grantedAt) expect(at).toBeGreaterThanOrEqual(untilMs - 20);
    expect(b.snapshot().map((s) => s.key).sort()).toEqual([limitedKey, openKey].sort());
  });

  it("learns a provider's pace from a 429: every process then sends at it, and a later 429 halves what the fleet sent", async () => {
    const key = uniqueName('learnt');
    const [a, b] = [limiter([]), limiter([])];
    // A 429 seen by a, which had seen 120 answers a minute (2 a second): the fleet's pace from now.
    const untilMs = Date.now() + 300;
    await a.pause(key, untilMs, { answeredPerMinute: 120 });
    const learntKey = `${prefix}:plim:${key.length}:${key}:lr`;
    // Another 429 inside the hold (the pause and a second after it: the 429s of requests sent before) leaves the pace.
    await b.pause(key, untilMs, { answeredPerMinute: 6000 });
    expect(Number((await redis.hgetall(learntKey)).r)).toBe(120);
    const started = Date.now();
    const times: number[] = [];
    // b learns of it by its once-a-second read: both queue through Redis at the pace.
    await Promise.all([a, b].flatMap((l, i) => Array.from({ length: 4 }, () => l.acquire(request(key, `org${i}`)).then(() => void times.push(Date.now() - started)))));
    expect(times).toHaveLength(8);
    // None before the pause ends; 8 at 2 a second growing by half a second (2, 3, 4.5, ...) take over a second.
    for (const t of times) expect(t + started).toBeGreaterThanOrEqual(untilMs - 20);
    expect(Math.max(...times)).toBeGreaterThanOrEqual(1000);
    // A later 429 halves what the fleet sent in the last second (at most the 8 granted), at least one a second.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, untilMs + 1000 - Date.now())));
    await a.pause(key, Date.now() + 10, { answeredPerMinute: 6000 });
    const pace = Number((await redis.hgetall(learntKey)).r);
    expect(pace).toBeGreaterThanOrEqual(60);
    expect(pace).toBeLessThanOrEqual((8 * 60) / 2);
  });

  it('drops the queue of a learnt pace once the pace lapses: the key\'s requests go out without a Redis round trip again', async () => {
    const key = uniqueName('lapsed');
    const l = limiter([]);
    await l.pause(key, Date.now() + 10, { answeredPerMinute: 600 });
    // Paced: the request goes through the key's queue in Redis.
    (await l.acquire(request(key, 'o'))).release();
    expect(l.snapshot().find((s) => s.key === key)).toMatchObject({ waiting: 0 });
    // The pace lapses (it expires in Redis after 10 minutes unrenewed; here at once).
    await redis.del(`${prefix}:plim:${key.length}:${key}:lr`);
    // Within the pause cache's second the process still queues; after it, the queue goes.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    (await l.acquire(request(key, 'o'))).release();
    let commands = 0;
    const onCommand = () => void commands++;
    redisCalls.subscribe(onCommand);
    try {
      for (let i = 0; i < 20; i++) (await l.acquire(request(key, 'o'))).release();
    } finally {
      redisCalls.unsubscribe(onCommand);
    }
    expect(commands).toBeLessThanOrEqual(1);
  });

  it('grants a request whose grant was in a reply lost on its way back, the call sent again (as a client resends an unanswered command after a reconnect) or not', async () => {
    const key = uniqueName('lostreply');
    // Renewals three minutes apart: nothing but the next turn may bring the grant.
    const l = limiter([{ key, requestsPerMinute: 120 }], { leaseMs: 540_000 });
    (await l.acquire(request(key, 'o'))).release();
    const pump = ProviderLimitStore.prototype.pump;
    let lose: 'resent' | 'failed' | undefined = 'resent';
    const lost: string[] = [];
    const spy = jest.spyOn(ProviderLimitStore.prototype, 'pump').mockImplementation(async function (this: ProviderLimitStore, ...args: Parameters<typeof pump>) {
      const reply = await pump.apply(this, args);
      if (lose === undefined || reply.lost || reply.granted.length === 0) return reply;
      // The script ran in Redis (the grant taken, and collected); its reply never arrived.
      lost.push(...reply.granted);
      const how = lose;
      lose = how === 'resent' ? 'failed' : undefined;
      if (how === 'resent') return pump.apply(this, args);
      throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    });
    try {
      for (const way of ['resent', 'failed']) {
        const waiting = track(l.acquire(request(key, 'o')));
        await eventually(() => waiting.settled(), { what: `the request granted after its grant's reply was lost (${way})`, timeoutMs: 5_000 });
        expect(waiting.error()).toBeUndefined();
      }
      expect(lost).toHaveLength(2);
    } finally {
      spy.mockRestore();
    }
  });

  it('sends no Redis command per request for a key without limits, past the pause read once a second', async () => {
    const l = limiter([]);
    const key = uniqueName('free');
    let commands = 0;
    const onCommand = () => void commands++;
    redisCalls.subscribe(onCommand);
    try {
      const started = Date.now();
      const grants: LimitGrant[] = [];
      for (let i = 0; i < 100; i++) grants.push(await l.acquire(request(key, 'o', { tokens: 100, lease: true })));
      for (const g of grants) g.release(10);
      expect(l.has(key)).toBe(false);
      // Everything ran within the pause's second, or one more read per second beyond.
      expect(commands).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / 1000));
      expect(commands).toBeGreaterThanOrEqual(1);
    } finally {
      redisCalls.unsubscribe(onCommand);
    }
  });

  it('rejects waiters on close and releases the slots it held', async () => {
    const key = uniqueName('close');
    const limits = [{ key, concurrentCalls: 1 }];
    const [a, b] = [limiter(limits), limiter(limits)];
    await a.acquire(request(key, 'o', { lease: true }));
    const waiting = track(a.acquire(request(key, 'o', { lease: true })));
    await eventually(async () => (await a.waitingOf('o'))[0]?.waiting === 1, { what: 'the second request to be queued' });
    await a.close();
    await eventually(() => waiting.settled(), { what: 'the waiter to reject' });
    expect(waiting.error()).toBeInstanceOf(Error);
    const granted = await b.acquire(request(key, 'o', { lease: true }));
    expect(await redis.zcard(keyOf(prefix, key, 'l'))).toBe(1);
    granted.release();
  });
});

/** A Redis of its own: FLUSHALL here (a restart losing every key) touches no other test file. */
describe('the provider limiter across a Redis that lost its state', () => {
  let dir: string;
  let port: number;
  let url: string;
  let admin: Redis;
  const prefix = 'plim-restart';
  const limiters: ProviderLimiter[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-provider-limiter-'));
    [port] = (await freePorts(1)) as [number];
    await startRedis(dir, port);
    url = `redis://127.0.0.1:${port}`;
    admin = createRedisConnection(url);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    admin?.disconnect();
    await stopRedis(dir, port);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('grants the requests that waited, and holds the concurrency limit again after one renewal', async () => {
    const rateKey = 'rate';
    const callKey = 'calls';
    const limits = [
      { key: rateKey, requestsPerMinute: 60 },
      { key: callKey, concurrentCalls: 2 },
    ];
    const connections = [createRedisConnection(url), createRedisConnection(url)];
    const [a, b] = connections.map((redis) => new ProviderLimiter({ redis, prefix, limits, log, leaseMs: 900 }));
    limiters.push(a!, b!);
    await b!.acquire(request(rateKey, 'o'));
    const waiters = Array.from({ length: 2 }, () => track(b!.acquire(request(rateKey, 'o'))));
    await eventually(async () => (await b!.waitingOf('o'))[0]?.waiting === 2, { what: 'the rate waiters to be queued' });
    const held = await Promise.all([a!.acquire(request(callKey, 'o', { lease: true })), a!.acquire(request(callKey, 'o', { lease: true }))]);

    await admin.flushall();

    await eventually(() => waiters.every((w) => w.settled()), { what: 'the waiters to be granted after the flush', timeoutMs: 6000 });
    expect(waiters.map((w) => w.error())).toEqual([undefined, undefined]);
    await eventually(async () => (await admin.zcard(keyOf(prefix, callKey, 'l'))) === 2, { what: 'the renewal to write the slots again' });
    const third = track(b!.acquire(request(callKey, 'o', { lease: true })));
    await eventually(() => b!.snapshot().find((s) => s.key === callKey)?.blockedBy === 'calls', { what: 'the third call to wait' });
    await stillTrueFor(() => !third.settled(), 300, { what: 'the third call waiting' });
    held[0]!.release();
    await eventually(() => third.settled(), { what: 'the third call to be granted' });
    expect(third.error()).toBeUndefined();
    await Promise.all([a!.close(), b!.close()]);
    for (const c of connections) c.disconnect();
  });
});
