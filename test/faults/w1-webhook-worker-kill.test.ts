import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { verifyWebhook, WebhookVerificationError } from '../../services/sdk/src/node';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { startTopology, type Topology } from './support/topology';

/**
 * W1: webhook deliveries while a worker is SIGKILLed and restarted. Every run asks for
 * `run.started` and its end; the receiver answers after 200 ms and refuses every fifth attempt
 * with a 503. A worker dies holding deliveries (its leases lapse after WEBHOOK_LEASE_MS and the
 * other worker takes them over). Every run's two events must reach the receiver, correctly
 * signed, the start before the end, nothing it did not ask for; every delivery on the run
 * records shows `delivered`; repeats (at least once) are counted, not failed.
 */

const SCENARIO = 'W1';
const RUNS = scale(40, 200);

interface Hit {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let hits: Hit[] = [];
let attempts = 0;
let server: http.Server;
let port = 0;
let topo: Topology;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      attempts += 1;
      const refuse = attempts % 5 === 0;
      const hit = { at: Date.now(), headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      setTimeout(() => {
        if (!refuse) hits.push(hit);
        res.writeHead(refuse ? 503 : 200).end(refuse ? 'busy' : 'ok');
      }, 200);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  const env = { FETCH_ALLOW_PRIVATE: `127.0.0.1:${port}`, WEBHOOK_POLL_MS: '100', WEBHOOK_RETRY_DELAYS_MS: '200,400', WEBHOOK_LEASE_MS: '2000', WEBHOOK_GIVE_UP_SECONDS: '600' };
  topo = await startTopology({ env });
}, 300_000);
afterAll(async () => {
  await topo?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
}, 60_000);

it(`${RUNS} runs with webhooks, a worker SIGKILLed while delivering: every asked-for event delivered, signed, in order`, async () => {
  hits = [];
  const workflow = (i: number) => ({ version: 2, nodes: [{ id: 'add', uses: 'math-add', inputs: { a: i, b: 1 } }, { id: 'sum', uses: 'output', inputs: { value: '${add.result}' } }] });
  const clients = Promise.all(
    Array.from({ length: RUNS }, async (_, i) => {
      await sleep(i * 25);
      const res = await fetch(`${topo.url}/v1/runs`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${topo.account.token}`, 'Content-Type': 'application/json', 'Webhook-Url': `http://127.0.0.1:${port}/hook`, 'Webhook-Events': 'run.started,run.completed,run.failed' },
        body: JSON.stringify({ workflow: workflow(i) }),
      });
      const text = await res.text();
      if (res.status !== 200) console.log(`${SCENARIO}: POST answered ${res.status}: ${text.slice(0, 300)}`);
      return /"runId":"([0-9a-f-]{36})"/.exec(text)?.[1];
    }),
  );
  // Kill a worker once deliveries are under way, then bring it back.
  const waitUntil = Date.now() + 30_000;
  while (hits.length < 5 && Date.now() < waitUntil) await sleep(20);
  if (hits.length < 5) {
    const state = await topo.database.pool.query(`SELECT w.cursor_seq, w.done, w.next_at, w.lease_until, (SELECT count(*) FROM webhook_deliveries d WHERE d.run_id = w.run_id) AS d, (SELECT max(last_error) FROM webhook_deliveries d WHERE d.run_id = w.run_id) AS e FROM run_webhooks w LIMIT 3`);
    console.log(`${SCENARIO} stuck:`, attempts, JSON.stringify(state.rows));
    const fs = await import('node:fs');
    for (const w of topo.workers) console.log(w.name, fs.readFileSync(w.logFile, 'utf8').split('\n').filter((l) => /webhook|sweep|error/i.test(l)).slice(0, 5).join('\n'));
  }
  expect(hits.length).toBeGreaterThanOrEqual(5);
  topo.workers[0]!.signal('SIGKILL');
  await topo.workers[0]!.exited();
  await sleep(500);
  await topo.workers[0]!.start();
  const runIds = (await clients).filter((id): id is string => id !== undefined);

  const secret = ((await (await fetch(`${topo.url}/v1/webhooks/secret`, { headers: { Authorization: `Bearer ${topo.account.token}` } })).json()) as { secret: string }).secret;
  const deadline = Date.now() + 90_000;
  const delivered = () => {
    const byRun = new Map<string, Set<number>>();
    for (const hit of hits) {
      const { data } = JSON.parse(hit.body) as { data: { runId: string; seq: number } };
      byRun.set(data.runId, (byRun.get(data.runId) ?? new Set()).add(data.seq));
    }
    return runIds.filter((id) => (byRun.get(id)?.size ?? 0) >= 2).length;
  };
  while (delivered() < runIds.length && Date.now() < deadline) await sleep(200);

  const { rows } = await topo.database.pool.query<{ run_id: string; status: string; seq: number; event_type: string }>(
    `SELECT d.run_id, d.status, d.seq, d.event_type FROM webhook_deliveries d JOIN runs r ON r.id = d.run_id WHERE r.org_id = $1::uuid`,
    [topo.account.orgId],
  );
  const { rows: runs } = await topo.database.pool.query<{ id: string; status: string }>(`SELECT id, status FROM runs WHERE org_id = $1::uuid`, [topo.account.orgId]);
  const statusOf = new Map(runs.map((r) => [r.id, r.status]));
  let badSignatures = 0;
  let unasked = 0;
  let outOfOrder = 0;
  let wrongEnd = 0;
  const seen = new Map<string, { first: Map<number, number>; count: number }>();
  for (const hit of hits) {
    try {
      const payload = verifyWebhook(secret, hit.headers, hit.body, { toleranceSeconds: 600 });
      const entry = seen.get(payload.data.runId) ?? { first: new Map(), count: 0 };
      entry.count += 1;
      if (!entry.first.has(payload.data.seq)) entry.first.set(payload.data.seq, hit.at);
      seen.set(payload.data.runId, entry);
      if (!['run.started', 'run.completed', 'run.failed'].includes(payload.type)) unasked += 1;
      if (payload.type !== 'run.started' && payload.type !== (statusOf.get(payload.data.runId) === 'completed' ? 'run.completed' : 'run.failed')) wrongEnd += 1;
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      badSignatures += 1;
    }
  }
  let missing = 0;
  for (const id of runIds) {
    const entry = seen.get(id);
    if (!entry || entry.first.size < 2) {
      missing += 1;
      continue;
    }
    const [startAt, endAt] = [entry.first.get(1)!, Math.max(...[...entry.first.entries()].filter(([seq]) => seq > 1).map(([, at]) => at))];
    if (startAt === undefined || startAt > endAt) outOfOrder += 1;
  }
  const repeats = [...seen.values()].reduce((n, e) => n + e.count - e.first.size, 0);
  const notDelivered = rows.filter((r) => r.status !== 'delivered').length;
  const check = await checkInvariants({ databaseUrl: topo.databaseUrl, apiUrl: topo.url, token: topo.account.token, clients: [], runIds, settleMs: 20_000 });
  console.log(`${SCENARIO}:`, { runs: runIds.length, hits: hits.length, attempts, missing, repeats, notDelivered, badSignatures, unasked, outOfOrder, wrongEnd, violations: check.violations.slice(0, 5) });

  figure(SCENARIO, 'runs with a webhook (run.started and the end), a worker SIGKILLed mid-delivery', runIds.length, undefined, 'runs');
  expectFigure(SCENARIO, 'runs acknowledged', runIds.length, { equals: RUNS }, 'runs');
  expectFigure(SCENARIO, 'runs whose asked-for events did not all reach the receiver', missing, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'deliveries not recorded delivered', notDelivered, { equals: 0 }, 'deliveries');
  expectFigure(SCENARIO, 'deliveries whose signature did not verify', badSignatures, { equals: 0 }, 'deliveries');
  expectFigure(SCENARIO, 'events delivered that were not asked for, or not the run’s own end', unasked + wrongEnd, { equals: 0 }, 'deliveries');
  expectFigure(SCENARIO, 'runs whose end reached the receiver before their start', outOfOrder, { equals: 0 }, 'runs');
  figure(SCENARIO, 'deliveries received more than once (at least once: the killed worker’s in flight)', repeats, undefined, 'deliveries');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, 300_000);
