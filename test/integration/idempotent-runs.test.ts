import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, run, startRun } from '../../services/sdk/src';
import { seedAccount } from '../support/fixtures';
import { adder, jsonCall } from '../support/json-api';
import { bearer, startTestService, type TestService } from '../support/service';
import { sseMessages } from '../support/sse';
import { pauseChain, pauseNode } from '../support/test-nodes';

/**
 * Idempotent run creation (docs/runs.md "Idempotent run creation"): the
 * `Idempotency-Key` header on `POST /v1/runs`, `/v1/runs/node` and the editor's runs, through the
 * whole service and the SDK.
 */

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ nodes: [pauseNode] });
}, 60_000);
afterAll(async () => service?.close());

/** `POST /v1/runs` with a key: the status, and for a 200 its whole stream as event types and the run id. */
async function create(body: unknown, key: string | undefined, token = service.account.token) {
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { ...bearer(token), 'Content-Type': 'application/json', ...(key === undefined ? {} : { 'Idempotency-Key': key }) },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) return { status: res.status, body: (await res.json()) as Record<string, unknown>, runId: undefined, events: [] as string[] };
  const events: string[] = [];
  let runId: string | undefined;
  for await (const m of sseMessages(res.body!)) {
    if (m.data === '[DONE]') {
      events.push('[DONE]');
      continue;
    }
    const event = JSON.parse(m.data) as { type: string; runId?: string };
    runId ??= event.runId;
    events.push(`${m.id}:${event.type}`);
  }
  return { status: 200, body: undefined, runId, events };
}

const runsOf = async (orgId = service.account.orgId) => (await service.prisma.run.findMany({ where: { orgId }, select: { id: true } })).map((r) => r.id);
const key = () => `key-${Math.random().toString(36).slice(2)}`;

describe('Idempotency-Key on POST /v1/runs', () => {
  it('attaches the same request sent again to the run it started: the same id, its stream replayed from the start, nothing run twice', async () => {
    const k = key();
    const before = (await runsOf()).length;
    const first = await create({ workflow: adder(2, 3) }, k);
    expect(first.status).toBe(200);
    expect(first.events).toEqual(['1:run.started', '2:step.started', '3:step.completed', '4:run.completed', '[DONE]']);
    // The same body with its fields in another order is the same request.
    const again = await create({ workflow: { nodes: adder(2, 3).nodes, version: 2 } }, k);
    expect(again).toEqual(first);
    expect((await runsOf()).length).toBe(before + 1);
    // The attach appended nothing to the run's log and started none of its steps again.
    const replay = await fetch(`${service.url}/v1/runs/${first.runId}/events`, { headers: bearer(service.account.token) });
    const logged: string[] = [];
    for await (const m of sseMessages(replay.body!)) logged.push(m.data === '[DONE]' ? '[DONE]' : `${m.id}:${(JSON.parse(m.data) as { type: string }).type}`);
    expect(logged).toEqual(first.events);
    const steps = await service.prisma.step.findMany({ where: { runId: first.runId! }, select: { attempt: true } });
    expect(steps).toEqual([{ attempt: 1 }]);
    const { rows } = await service.database.pool.query<{ run_id: string }>(`SELECT run_id FROM idempotency_keys WHERE org_id = $1::uuid AND key = $2`, [service.account.orgId, k]);
    expect(rows).toEqual([{ run_id: first.runId }]);
  });

  it('refuses the key with a different request: 422 saying so, naming its run; nothing starts', async () => {
    const k = key();
    const first = await create({ workflow: adder(1, 1) }, k);
    const before = (await runsOf()).length;
    const other = await create({ workflow: adder(1, 2) }, k);
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused', runId: first.runId, error: expect.stringContaining(`the Idempotency-Key "${k}" was sent in the last 24 hours with a different request (run ${first.runId})`) });
    // Another deadline is another request too, and so is another operation with the same key.
    const deadline = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Idempotency-Key': k, 'Max-Duration-Seconds': '60' }, body: JSON.stringify({ workflow: adder(1, 1) }) });
    expect(deadline.status).toBe(422);
    const node = await jsonCall(service.url, 'POST', '/v1/runs/node', { node: 'test-pause', inputs: { ms: 1 } }, service.account.token).catch(() => null);
    expect(node?.status).toBe(200);
    const nodeSameKey = await fetch(`${service.url}/v1/runs/node`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Idempotency-Key': k }, body: JSON.stringify({ node: 'test-pause', inputs: { ms: 1 } }) });
    expect(nodeSameKey.status).toBe(422);
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('starts exactly one run for many identical requests at once, and every one of them follows it to its end', async () => {
    const k = key();
    const before = (await runsOf()).length;
    const answers = await Promise.all(Array.from({ length: 20 }, () => create({ workflow: pauseChain(2, 100) }, k)));
    const ids = new Set(answers.map((a) => a.runId));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(ids.size).toBe(1);
    for (const a of answers) expect(a.events).toEqual(answers[0]!.events);
    expect(answers[0]!.events.at(-2)).toMatch(/run\.completed$/);
    // Started once: one run.started in its stream, each step started once.
    expect(answers[0]!.events.filter((e) => e.endsWith(':run.started'))).toEqual(['1:run.started']);
    expect(answers[0]!.events.filter((e) => e.endsWith(':step.started')).length).toBe(2);
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('keeps keys per organization, lets a refused request keep no key, and lets an expired key start a new run', async () => {
    const k = key();
    const mine = await create({ workflow: adder(4, 4) }, k);
    const other = await seedAccount(service.prisma, { slug: 'other-org', scopes: ['read', 'run'], balanceMicros: 1_000_000 });
    const theirs = await create({ workflow: adder(4, 4) }, k, other.token);
    expect(theirs.status).toBe(200);
    expect(theirs.runId).not.toBe(mine.runId);

    // Refused for credit: no key kept, so the same request once the credit is there starts the run.
    const broke = await seedAccount(service.prisma, { slug: 'broke-org', scopes: ['read', 'run'], balanceMicros: 0 });
    const refused = await create({ workflow: adder(5, 5) }, k, broke.token);
    expect(refused.status).toBe(402);
    await service.prisma.organization.update({ where: { id: broke.orgId }, data: { balanceMicros: 1_000_000n } });
    const paid = await create({ workflow: adder(5, 5) }, k, broke.token);
    expect(paid.status).toBe(200);

    // A day later the key is free again: the same request starts another run, which the key names from then on.
    await service.database.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE org_id = $1::uuid AND key = $2`, [service.account.orgId, k]);
    const later = await create({ workflow: adder(4, 4) }, k);
    expect(later.status).toBe(200);
    expect(later.runId).not.toBe(mine.runId);
    expect((await create({ workflow: adder(4, 4) }, k)).runId).toBe(later.runId);

    // The reaper deletes keys past their day.
    await service.database.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE org_id = $1::uuid`, [other.orgId]);
    const report = await service.runtime.reaper!.sweep();
    expect(report.keysExpired).toBeGreaterThanOrEqual(1);
    const { rows } = await service.database.pool.query(`SELECT 1 FROM idempotency_keys WHERE org_id = $1::uuid`, [other.orgId]);
    expect(rows).toEqual([]);
  });

  it('refuses a malformed key with a 400 naming the header', async () => {
    for (const bad of ['has space', 'x'.repeat(256), 'é']) {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Idempotency-Key': bad }, body: JSON.stringify({ workflow: adder(1, 1) }) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain('the Idempotency-Key header must be 1 to 255 printable ASCII characters');
    }
  });
});

describe('Idempotency-Key on POST /v1/runs/node', () => {
  it('answers the same outputs again from the one run', async () => {
    const k = key();
    const before = (await runsOf()).length;
    const call = () =>
      fetch(`${service.url}/v1/runs/node`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Idempotency-Key': k }, body: JSON.stringify({ node: 'test-pause', inputs: { ms: 50, n: 41 } }) }).then(
        async (res) => ({ status: res.status, body: (await res.json()) as unknown }),
      );
    const [a, b] = await Promise.all([call(), call()]);
    expect(a).toEqual({ status: 200, body: { outputs: { n: { kind: 'int', value: 42 }, done: { kind: 'boolean', value: true } } } });
    expect(b).toEqual(a);
    expect(await call()).toEqual(a);
    expect((await runsOf()).length).toBe(before + 1);
  });
});

/**
 * A proxy that loses the answer to the first `POST /v1/runs` it carries: the request reaches the
 * service (the run is created), then the client's connection is destroyed before a byte of the
 * answer. Everything else passes through.
 */
async function answerLosingProxy(target: string) {
  let lost = 0;
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (req.method === 'POST' && req.url === '/v1/runs' && lost === 0) {
        lost += 1;
        answer.destroy();
        res.socket?.destroy();
        return;
      }
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lost: () => lost, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('the SDK sends a key by default', () => {
  it('sends one with every run creation, and after a lost answer sends the same request again: one run, followed to its end', async () => {
    const proxy = await answerLosingProxy(service.url);
    try {
      const client = new Client({ apiKey: service.account.token, baseUrl: proxy.url, resume: { initialDelayMs: 20 } });
      const before = (await runsOf()).length;
      const handle = startRun(client, { workflow: pauseChain(1, 20) });
      await handle.result();
      expect(proxy.lost()).toBe(1);
      expect((await runsOf()).length).toBe(before + 1);
      const { rows } = await service.database.pool.query<{ key: string }>(`SELECT key FROM idempotency_keys WHERE run_id = $1::uuid`, [await handle.runId]);
      expect(rows[0]!.key).toMatch(/^[0-9a-f-]{36}$/);

      // A caller's own key is sent as given.
      const direct = new Client({ apiKey: service.account.token, baseUrl: service.url });
      const own = key();
      await run(direct, { workflow: pauseChain(1, 1) }, { options: { idempotencyKey: own } });
      const kept = await service.database.pool.query(`SELECT 1 FROM idempotency_keys WHERE org_id = $1::uuid AND key = $2`, [service.account.orgId, own]);
      expect(kept.rows.length).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});
