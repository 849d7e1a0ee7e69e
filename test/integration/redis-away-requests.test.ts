import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, ServiceError, startRun } from '../../services/sdk/src';
import { ensureCliBuilt } from '../support/cli-build';
import { CliHome, finished, stderrMatching } from '../support/cli-process';
import { eventually } from '../support/eventually';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy';
import { bearer, startTestService, type TestService } from '../support/service';
import { stack } from '../support/stack';

/**
 * Requests that must write to Redis while it is unreachable end in a bounded time
 * (REQUEST_REDIS_WAIT_MS, 1 s here): the service's Redis client queues commands while it
 * reconnects, so without a bound they waited for as long as Redis was away. The service reaches
 * Redis through a proxy that refuses it; every request is also bounded by the client, so one
 * that waits for Redis fails here rather than hang.
 */

const workflow = {
  version: 2 as const,
  nodes: [
    { id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } },
    { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } },
  ],
};

let service: TestService;
let proxy: FaultProxy;
beforeAll(async () => {
  proxy = await startFaultProxy(stack().redisUrl);
  service = await startTestService({ env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REQUEST_REDIS_WAIT_MS: '1000', REAPER_INTERVAL_SECONDS: '1' } });
});
afterAll(async () => {
  await service?.close();
  await proxy?.close();
});
afterEach(() => {
  proxy.mode = 'pass';
  proxy.latencyMs = 0;
});

const auth = () => ({ ...bearer(service.account.token), 'Content-Type': 'application/json' });
const awayFromRedis = () => {
  proxy.mode = 'refuse';
  proxy.resetAll();
};
const eventsOf = (runId: string) =>
  fetch(`${service.url}/v1/runs/${runId}/events`, { headers: { ...auth(), Accept: 'text/event-stream' }, signal: AbortSignal.timeout(10_000) }).then((r) => r.text());

it('a new run: 503 unavailable, the run failed unstarted; its events follow when Redis is back', async () => {
  awayFromRedis();
  const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...auth(), Accept: 'text/event-stream' }, body: JSON.stringify({ workflow }), signal: AbortSignal.timeout(20_000) });
  const body = (await res.json()) as { code: string; error: string };
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(body).toMatchObject({ code: 'unavailable', error: 'the run could not be started: the queue and event store (Redis) did not answer within 1000 ms (run.started); nothing of it ran; retry in 5 s' });
  const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: service.account.orgId }, orderBy: { createdAt: 'desc' } });
  expect(run).toMatchObject({ status: 'failed', error: { code: 'unavailable' } });

  proxy.mode = 'pass';
  // The client's queued commands reach Redis: the failed run's log reads started, then failed.
  await eventually(async () => /"run\.started"[\s\S]*"run\.failed"[\s\S]*\[DONE\]/.test(await eventsOf(run.id)), { timeoutMs: 30_000, what: "the failed run's events" });
  // Reaper sweeps later, nothing of it ran and nothing is held; a run started now runs.
  await sleep(2500);
  const after = await service.prisma.run.findUniqueOrThrow({ where: { id: run.id }, include: { steps: true } });
  expect(after.status).toBe('failed');
  expect(after.steps.every((s) => s.startedAt === null && s.status !== 'completed')).toBe(true);
  expect(Number(after.heldMicros)).toBe(0);
  const again = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...auth(), Accept: 'text/event-stream' }, body: JSON.stringify({ workflow }) });
  expect(again.status).toBe(200);
  expect(await again.text()).toMatch(/"run\.completed"[\s\S]*\[DONE\]/);
}, 90_000);

it("a cancel: answered with the run cancelled; its run.failed follows when Redis is back", async () => {
  // A run stored running with nothing enqueued: nothing but the cancel ends it.
  const run = await service.prisma.run.create({
    data: { orgId: service.account.orgId, userId: service.account.userId, definition: workflow, inputs: {}, capMicros: 1_000_000n, status: 'running', startedAt: new Date() },
  });
  awayFromRedis();
  const res = await fetch(`${service.url}/v1/runs/${run.id}/cancel`, { method: 'POST', headers: auth(), body: '{}', signal: AbortSignal.timeout(20_000) });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ id: run.id, status: 'cancelled', error: { code: 'cancelled' } });
  proxy.mode = 'pass';
  await eventually(async () => /"run\.failed"[\s\S]*"cancelled"[\s\S]*\[DONE\]/.test(await eventsOf(run.id)), { timeoutMs: 30_000, what: "the cancelled run's run.failed" });
}, 60_000);

it("a run's event stream: 503 unavailable, to be resumed with the same Last-Event-ID", async () => {
  const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: service.account.orgId }, orderBy: { createdAt: 'asc' } });
  awayFromRedis();
  const res = await fetch(`${service.url}/v1/runs/${run.id}/events`, { headers: { ...auth(), Accept: 'text/event-stream', 'Last-Event-ID': '1' }, signal: AbortSignal.timeout(20_000) });
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(await res.json()).toMatchObject({ code: 'unavailable', error: "the run's event log (Redis) did not answer within 1000 ms; retry in 5 s with the same Last-Event-ID" });
}, 60_000);

it('the SDK sends a run refused 503 again (nothing of it started) and follows the run once Redis is back; with no retry left it throws the service\'s answer', async () => {
  const patient = new Client({ apiKey: service.account.token, baseUrl: service.url, resume: { initialDelayMs: 200, maxAttempts: 6 } });
  const completed = { orgId: service.account.orgId, status: 'completed' as const };
  const refused = { orgId: service.account.orgId, status: 'failed' as const, error: { path: ['code'], equals: 'unavailable' } };
  const [completedBefore, refusedBefore] = await Promise.all([service.prisma.run.count({ where: completed }), service.prisma.run.count({ where: refused })]);
  awayFromRedis();
  const handle = startRun(patient, { workflow });
  // Back after two refusals (each waits REQUEST_REDIS_WAIT_MS): the handle sent the request again.
  await eventually(async () => (await service.prisma.run.count({ where: refused })) >= refusedBefore + 2, { timeoutMs: 30_000, what: 'two refused starts' });
  proxy.mode = 'pass';
  expect(await handle.result()).toEqual({ sum: { kind: 'float', value: 5 } });
  expect(await service.prisma.run.count({ where: completed })).toBe(completedBefore + 1);

  const hasty = new Client({ apiKey: service.account.token, baseUrl: service.url, resume: { initialDelayMs: 50, maxAttempts: 0 } });
  awayFromRedis();
  const failure = await startRun(hasty, { workflow }).result().catch((err: unknown) => err);
  expect(failure).toBeInstanceOf(ServiceError);
  expect(failure).toMatchObject({ status: 503, code: 'unavailable', message: expect.stringMatching(/^the run could not be started: the queue and event store \(Redis\) did not answer within 1000 ms/) });
}, 90_000);

it('the CLI says on stderr why it waits and when it tries again, then prints the run\'s outputs', async () => {
  ensureCliBuilt();
  const home = new CliHome({ SERVICE_URL: service.url, SERVICE_TOKEN: service.account.token });
  try {
    fs.writeFileSync(path.join(home.dir, 'sum.json'), JSON.stringify(workflow));
    awayFromRedis();
    const child = home.spawn(['run', 'sum.json']);
    const done = finished(child, 60_000);
    await stderrMatching(child, /svc: the run could not be started: the queue and event store \(Redis\) did not answer within 1000 ms \(run\.started\); nothing of it ran; retry in 5 s; starting the run again in \d+\.\d s \(try 1\)\n/);
    proxy.mode = 'pass';
    const result = await done;
    expect(result).toMatchObject({ code: 0, stdout: 'sum: 5\n' });
    expect(result.stderr).toMatch(/run\.completed/);
  } finally {
    home.remove();
  }
}, 90_000);
