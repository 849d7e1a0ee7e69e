import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RunSchema } from '../../services/contract';
import { eventually } from '../support/eventually';
import { seedAccount } from '../support/fixtures';
import { adder, expectValid, jsonCall } from '../support/json-api';
import { bearer, startTestService, type TestService } from '../support/service';
import { sseMessages, type SseMessage } from '../support/sse';

/**
 * Cancellation (docs/runs.md "Cancellation"): `POST /v1/runs/:id/cancel` and the
 * `Max-Duration-Seconds` deadline, through the whole service, against a fake of fal's queue API
 * whose jobs stay queued until cancelled: the cancel reaches the provider's cancel endpoint, the
 * reservation is given back, the attempt that called out is charged what it held, and the stream
 * ends with `run.failed` (code `cancelled`) and `[DONE]`.
 */

const FAL_KEY = 'fal-test-key-0123456789abcdef';
/** The fal app's worst case per image: what a cancelled attempt that called out is charged. */
const PRICE = 3000;

interface Seen {
  method: string;
  path: string;
}

/** fal's queue API: submissions are answered at once, and stay IN_QUEUE until cancelled. */
async function falFake() {
  const seen: Seen[] = [];
  let base = '';
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method!, path: req.url! });
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method === 'POST' && req.url === '/fal-ai/flux/schnell') {
        const id = `req-${seen.length}`;
        const at = `${base}/fal-ai/flux/requests/${id}`;
        return json(200, { request_id: id, response_url: at, status_url: `${at}/status`, cancel_url: `${at}/cancel`, queue_position: 3 });
      }
      if (req.method === 'GET' && req.url!.endsWith('/status')) return json(202, { status: 'IN_QUEUE', queue_position: 3 });
      if (req.method === 'PUT' && req.url!.endsWith('/cancel')) return json(202, { status: 'CANCELLATION_REQUESTED' });
      json(404, { detail: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const imageWorkflow = {
  version: 2,
  nodes: [
    { id: 'gen', uses: 'fal-image', inputs: { prompt: 'a lighthouse' } },
    { id: 'image', uses: 'output', inputs: { value: '${gen.image}' } },
  ],
};

let fal: Awaited<ReturnType<typeof falFake>>;
let service: TestService;

beforeAll(async () => {
  fal = await falFake();
  service = await startTestService({ env: { FAL_KEY: FAL_KEY, FAL_BASE_URL: fal.base, PROVIDER_POLL_MS: '20' } });
  // The test service's worker leaves its timers to the test; this one sweeps deadlines as a deployed worker does.
  service.runtime.deadlines!.start(200);
}, 60_000);
afterAll(async () => {
  await service?.runtime.deadlines?.stop();
  await service?.close();
  await fal?.close();
});

/** A run started with `POST /v1/runs`: its id once `run.started` arrived, and the rest of its stream. */
async function startRun(workflow: unknown, headers: Record<string, string> = {}, token = service.account.token) {
  const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ workflow }) });
  expect(res.status).toBe(200);
  const messages: SseMessage[] = [];
  const iterator = sseMessages(res.body!)[Symbol.asyncIterator]();
  const first = await iterator.next();
  messages.push(first.value as SseMessage);
  const { runId } = JSON.parse((first.value as SseMessage).data) as { type: string; runId: string };
  const rest = (async () => {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) messages.push(next.value);
    return messages;
  })();
  return { runId, messages, rest };
}

/** The types of a stream's events, `[DONE]` included; fal's queue position reports (`step.progress`) left out. */
const events = (messages: SseMessage[]) =>
  messages.map((m) => (m.data === '[DONE]' ? '[DONE]' : (JSON.parse(m.data) as { type: string }).type)).filter((type) => type !== 'step.progress');
const last = (messages: SseMessage[], type: string) => messages.map((m) => (m.data === '[DONE]' ? null : (JSON.parse(m.data) as { type: string; error?: unknown }))).find((e) => e?.type === type);

async function money(runId: string) {
  const { rows } = await service.database.pool.query<{ reserved: string; spent: string; held: string; charged: string; status: string; ledger: string }>(
    `SELECT r.reserved_micros::text AS reserved, r.spent_micros::text AS spent, r.held_micros::text AS held, r.charged_micros::text AS charged, r.status,
            (SELECT COALESCE(-sum(amount_micros), 0)::text FROM ledger_entries WHERE run_id = r.id) AS ledger
       FROM runs r WHERE r.id = $1::uuid`,
    [runId],
  );
  const row = rows[0]!;
  return { status: row.status, reserved: Number(row.reserved), spent: Number(row.spent), held: Number(row.held), charged: Number(row.charged), ledger: Number(row.ledger) };
}

describe('POST /v1/runs/:id/cancel', () => {
  it('stops a run mid-provider-call: fal is told to cancel, the reservation is released, the stream ends run.failed cancelled, [DONE]', async () => {
    const run = await startRun(imageWorkflow);
    // The job is submitted and polled: the provider call is in flight, its worst case held.
    await eventually(() => fal.seen.some((s) => s.method === 'GET' && s.path.endsWith('/status')), { what: 'fal polled' });
    expect(await money(run.runId)).toMatchObject({ status: 'running', reserved: PRICE });

    const answer = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, service.account.token);
    expect(answer.status).toBe(200);
    expectValid(RunSchema, answer.body);
    expect(answer.body).toMatchObject({ id: run.runId, status: 'cancelled', error: { code: 'cancelled' }, steps: [{ nodeId: 'gen', status: 'cancelled', costUsd: PRICE / 1e6 }] });

    const messages = await run.rest;
    expect(events(messages)).toEqual(['run.started', 'step.started', 'run.failed', '[DONE]']);
    expect(last(messages, 'run.failed')).toEqual({ type: 'run.failed', error: { code: 'cancelled', message: expect.stringContaining('cancelled') } });
    // The abort reached the worker, whose fal node called the job's cancel_url.
    await eventually(() => fal.seen.some((s) => s.method === 'PUT' && /^\/fal-ai\/flux\/requests\/req-\d+\/cancel$/.test(s.path)), { what: 'the cancel_url called' });
    // Nothing held any more; the call that was made is charged what it held, once.
    expect(await money(run.runId)).toEqual({ status: 'cancelled', reserved: 0, held: 0, spent: PRICE, charged: PRICE, ledger: PRICE });
    const { rows } = await service.database.pool.query<{ held: string }>(`SELECT held_micros::text AS held FROM organizations WHERE id = $1::uuid`, [service.account.orgId]);
    expect(Number(rows[0]!.held)).toBe(0);

    // Idempotent: again, the same run, nothing new in its log or its charges.
    const again = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, {}, service.account.token);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(answer.body);
    const replay = await fetch(`${service.url}/v1/runs/${run.runId}/events`, { headers: bearer(service.account.token) });
    const replayed: SseMessage[] = [];
    for await (const m of sseMessages(replay.body!)) replayed.push(m);
    expect(events(replayed)).toEqual(['run.started', 'step.started', 'run.failed', '[DONE]']);
    expect(await money(run.runId)).toMatchObject({ charged: PRICE, ledger: PRICE });
  }, 30_000);

  it('answers a run that finished first as it finished, unchanged', async () => {
    const run = await startRun(adder(2, 3));
    const messages = await run.rest;
    expect(events(messages)).toContain('run.completed');
    const answer = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, service.account.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: run.runId, status: 'completed', error: null, outputs: { sum: { value: 5 } } });
  });

  it('is refused to anyone but the user who started the run, with a message saying so', async () => {
    const run = await startRun(imageWorkflow);
    try {
      // Another member of the same organization: 403.
      const teammate = await seedAccount(service.prisma, { slug: 'teammate', scopes: ['read', 'run'], balanceMicros: 1_000_000 });
      await service.prisma.accessToken.update({ where: { id: teammate.tokenId! }, data: { orgId: service.account.orgId } });
      await service.prisma.membership.create({ data: { userId: teammate.userId, orgId: service.account.orgId, role: 'admin' } });
      const forbidden = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, teammate.token);
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toMatchObject({ code: 'forbidden', error: expect.stringContaining('only the user who started a run can cancel it') });

      // Another organization: the run does not exist for it.
      const stranger = await seedAccount(service.prisma, { slug: 'stranger', scopes: ['read', 'run'], balanceMicros: 1_000_000 });
      const hidden = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, stranger.token);
      expect(hidden.status).toBe(404);
      expect(hidden.body.error).toContain(`no run with id "${run.runId}"`);

      // A read-only token of the owner: the run scope is needed.
      const reader = await seedAccount(service.prisma, { slug: 'reader', scopes: ['read'] });
      await service.prisma.accessToken.update({ where: { id: reader.tokenId! }, data: { orgId: service.account.orgId, userId: service.account.userId } });
      const scoped = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, reader.token);
      expect(scoped.status).toBe(403);
      expect(scoped.body.code).toBe('insufficient_scope');

      expect((await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, null)).status).toBe(401);
      expect((await jsonCall(service.url, 'POST', '/v1/runs/not-a-run/cancel', undefined, service.account.token)).status).toBe(404);
      const extra = await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, { reason: 'x' }, service.account.token);
      expect(extra.status).toBe(400);
      expect(extra.body.error).toContain('reason');
      // None of them stopped it.
      expect((await money(run.runId)).status).toBe('running');
    } finally {
      await jsonCall(service.url, 'POST', `/v1/runs/${run.runId}/cancel`, undefined, service.account.token);
      await run.rest;
    }
  }, 30_000);
});

describe('Max-Duration-Seconds: a run past its own deadline is cancelled', () => {
  it('cancels the run at its deadline: run.failed cancelled, [DONE], the provider told to cancel, nothing held', async () => {
    const cancelsBefore = fal.seen.filter((s) => s.method === 'PUT').length;
    const run = await startRun(imageWorkflow, { 'Max-Duration-Seconds': '1' });
    const record = await jsonCall(service.url, 'GET', `/v1/runs/${run.runId}`, undefined, service.account.token);
    const deadline = Date.parse(record.body.deadlineAt as string) - Date.parse(record.body.createdAt as string);
    expect(deadline).toBeGreaterThanOrEqual(999);
    expect(deadline).toBeLessThanOrEqual(1001);
    const messages = await run.rest;
    expect(events(messages)).toEqual(['run.started', 'step.started', 'run.failed', '[DONE]']);
    expect(last(messages, 'run.failed')).toEqual({ type: 'run.failed', error: { code: 'cancelled', message: expect.stringContaining('maxDurationSeconds') } });
    await eventually(() => fal.seen.filter((s) => s.method === 'PUT').length > cancelsBefore, { what: 'the cancel_url called' });
    expect(await money(run.runId)).toMatchObject({ status: 'cancelled', reserved: 0, held: 0 });
    const after = await jsonCall(service.url, 'GET', `/v1/runs/${run.runId}`, undefined, service.account.token);
    expect(after.body).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
  }, 30_000);

  it('leaves a run that finishes in time alone, and runs.node takes it too', async () => {
    const res = await fetch(`${service.url}/v1/runs/node`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Max-Duration-Seconds': '60' },
      body: JSON.stringify({ node: 'fal-image', inputs: { prompt: 'x' } }),
      signal: AbortSignal.timeout(100),
    }).catch((err: unknown) => err);
    // The job never finishes: the call is left waiting (and the run is cancelled below).
    expect((res as { name?: string }).name).toBe('TimeoutError');
    const { rows } = await service.database.pool.query<{ id: string; seconds: string }>(
      `SELECT id, round(extract(epoch FROM deadline_at - created_at))::text AS seconds FROM runs WHERE user_id = $1::uuid AND status = 'running' ORDER BY created_at DESC LIMIT 1`,
      [service.account.userId],
    );
    expect(rows[0]?.seconds).toBe('60');
    await jsonCall(service.url, 'POST', `/v1/runs/${rows[0]!.id}/cancel`, undefined, service.account.token);

    const run = await startRun(adder(1, 1), { 'Max-Duration-Seconds': '5' });
    expect(events(await run.rest)).toContain('run.completed');
  }, 30_000);

  it('refuses a malformed value with a 400 naming the header, and starts nothing', async () => {
    const { rows: before } = await service.database.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM runs`);
    for (const value of ['0', '-5', '1.5', 'soon', '604801']) {
      const res = await fetch(`${service.url}/v1/runs`, {
        method: 'POST',
        headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Max-Duration-Seconds': value },
        body: JSON.stringify({ workflow: adder(1, 2) }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { code: string; error: string };
      expect(body).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('Max-Duration-Seconds header must be a whole number of seconds from 1 to 604800') });
    }
    const { rows: after } = await service.database.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM runs`);
    expect(after[0]!.n).toBe(before[0]!.n);
  });
});
