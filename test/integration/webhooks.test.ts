import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RunSchema } from '../../services/contract';
import { verifyWebhook, WebhookVerificationError } from '../../services/sdk/src/node';
import { eventually } from '../support/eventually';
import { seedAccount } from '../support/fixtures';
import { adder, expectValid, jsonCall } from '../support/json-api';
import { bearer, startTestService, type TestService } from '../support/service';

/**
 * Webhooks (docs/webhooks.md): a run started with `Webhook-Url` has its events POSTed
 * there, signed with the organization's secret (Standard Webhooks), verified here by the SDK's
 * verifier as a receiver would; failures are retried with backoff and given up on after
 * WEBHOOK_GIVE_UP_SECONDS; every attempt shows on the run; the address rules apply.
 */

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver: `/ok` answers 200, `/flaky` 503 twice then 200, `/down` always 500. */
async function receiver() {
  const received: Received[] = [];
  const flaky = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry = { path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(entry);
      if (req.url!.startsWith('/ok')) return res.writeHead(200).end('thanks');
      if (req.url!.startsWith('/flaky')) {
        const id = String(req.headers['webhook-id']);
        const seen = (flaky.get(id) ?? 0) + 1;
        flaky.set(id, seen);
        return res.writeHead(seen <= 2 ? 503 : 200).end(seen <= 2 ? 'busy' : 'ok');
      }
      res.writeHead(500).end('broken');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { port, url: `http://127.0.0.1:${port}`, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let hooks: Awaited<ReturnType<typeof receiver>>;
let service: TestService;
beforeAll(async () => {
  hooks = await receiver();
  service = await startTestService({
    // The receiver's one loopback port is allowed, as a developer allows a local receiver; nothing else private is.
    env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${hooks.port}`, WEBHOOK_RETRY_DELAYS_MS: '100,200', WEBHOOK_GIVE_UP_SECONDS: '1', WEBHOOK_POLL_MS: '50' },
  });
  service.runtime.webhooks!.start(50);
}, 60_000);
afterAll(async () => {
  await service?.runtime.webhooks?.stop();
  await service?.close();
  await hooks?.close();
});

async function startRun(headers: Record<string, string>, workflow: unknown = adder(2, 3)): Promise<string> {
  const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ workflow }) });
  expect(res.status).toBe(200);
  const text = await res.text();
  return /"runId":"([0-9a-f-]{36})"/.exec(text)![1]!;
}

const secretOf = async (token = service.account.token) => (await jsonCall(service.url, 'GET', '/v1/webhooks/secret', undefined, token)).body.secret as string;
const record = async (runId: string) => (await jsonCall(service.url, 'GET', `/v1/runs/${runId}`, undefined, service.account.token)).body;
const deliveredTo = (path: string, runId: string) => hooks.received.filter((r) => r.path === path && r.body.includes(runId));

describe('webhooks', () => {
  it("POSTs the run's end to its webhook, signed: the SDK's verifier accepts it, and the run shows the delivery", async () => {
    const runId = await startRun({ 'Webhook-Url': `${hooks.url}/ok?run=1` });
    const [delivery] = await eventually(() => (deliveredTo('/ok?run=1', runId).length > 0 ? deliveredTo('/ok?run=1', runId) : null), { timeoutMs: 10_000, what: 'the delivery' });
    const secret = await secretOf();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const payload = verifyWebhook(secret, delivery!.headers, delivery!.body);
    expect(payload).toMatchObject({ type: 'run.completed', data: { runId, seq: 4, event: { type: 'run.completed', outputs: { sum: { value: 5 } } } } });
    expect(delivery!.headers['webhook-id']).toBe(`msg_${runId}_4`);
    expect(delivery!.headers['content-type']).toBe('application/json');
    const run = await eventually(async () => ((await record(runId)).webhook?.deliveries?.[0]?.status === 'delivered' ? record(runId) : null), { what: 'the delivery recorded' });
    expectValid(RunSchema, run);
    expect(run.webhook).toMatchObject({ url: `${hooks.url}/ok?run=1`, events: ['run.completed', 'run.failed'], deliveries: [{ seq: 4, type: 'run.completed', status: 'delivered', attempts: 1, lastStatusCode: 200, lastError: null }] });

    // Changed in transit, or signed with another secret, or replayed later: refused.
    expect(() => verifyWebhook(secret, delivery!.headers, delivery!.body.replace('"value":5', '"value":6'))).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook('whsec_' + Buffer.alloc(24, 7).toString('base64'), delivery!.headers, delivery!.body)).toThrow('the signature does not match');
    expect(() => verifyWebhook(secret, delivery!.headers, delivery!.body, { now: new Date(Date.now() + 3600_000) })).toThrow('beyond the 300 s tolerance');
  });

  it('sends the events asked for with Webhook-Events, in order, one delivery each', async () => {
    const runId = await startRun({ 'Webhook-Url': `${hooks.url}/ok?run=2`, 'Webhook-Events': 'run.started, step.completed,run.completed' });
    await eventually(() => deliveredTo('/ok?run=2', runId).some((r) => r.body.includes('"type":"run.completed"')), { timeoutMs: 10_000, what: 'the last delivery' });
    const secret = await secretOf();
    const types = deliveredTo('/ok?run=2', runId).map((r) => verifyWebhook(secret, r.headers, r.body)).map((p) => `${p.data.seq}:${p.type}`);
    expect(types).toEqual(['1:run.started', '3:step.completed', '4:run.completed']);
  });

  it('retries a failing receiver with backoff, with the same webhook-id, and records every attempt', async () => {
    const runId = await startRun({ 'Webhook-Url': `${hooks.url}/flaky` });
    await eventually(async () => (await record(runId)).webhook?.deliveries?.[0]?.status === 'delivered', { timeoutMs: 10_000, what: 'the third attempt' });
    const attempts = deliveredTo('/flaky', runId);
    expect(attempts.map((a) => a.headers['webhook-id'])).toEqual(Array(3).fill(`msg_${runId}_4`));
    expect((await record(runId)).webhook.deliveries[0]).toMatchObject({ status: 'delivered', attempts: 3, lastStatusCode: 200 });
  });

  it('gives up on a receiver that keeps failing, after WEBHOOK_GIVE_UP_SECONDS, saying why', async () => {
    const runId = await startRun({ 'Webhook-Url': `${hooks.url}/down` });
    const run = await eventually(async () => ((await record(runId)).webhook?.deliveries?.[0]?.status === 'failed' ? record(runId) : null), { timeoutMs: 10_000, what: 'the delivery given up on' });
    expect(run.webhook.deliveries[0]).toMatchObject({ status: 'failed', lastStatusCode: 500, lastError: 'answered 500: broken', nextAttemptAt: null });
    expect(run.webhook.deliveries[0].attempts).toBeGreaterThanOrEqual(3);
  });

  it('applies the address rules: a private address is refused before the run starts, a host name resolving to one at delivery', async () => {
    const before = await service.prisma.run.count();
    for (const url of ['http://10.1.2.3/hook', 'http://169.254.169.254/latest', `http://127.0.0.1:${hooks.port + 1}/x`, 'http://[::1]/x']) {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Webhook-Url': url }, body: JSON.stringify({ workflow: adder(1, 1) }) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/^the Webhook-Url header names .*; webhooks are sent only to public addresses$/);
    }
    for (const [header, value, says] of [
      ['Webhook-Url', 'ftp://example.com/x', 'absolute http or https URL'],
      ['Webhook-Events', 'run.completed', 'needs a Webhook-Url header'],
    ] as const) {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', [header]: value }, body: JSON.stringify({ workflow: adder(1, 1) }) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain(says);
    }
    const bad = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Webhook-Url': `${hooks.url}/ok`, 'Webhook-Events': 'run.exploded' }, body: JSON.stringify({ workflow: adder(1, 1) }) });
    expect(bad.status).toBe(400);
    expect(await service.prisma.run.count()).toBe(before);

    // localhost resolves to a loopback address, on a port not allowed: refused when delivering, and said on the run.
    const runId = await startRun({ 'Webhook-Url': `http://localhost:${hooks.port + 1}/hook` });
    const run = await eventually(async () => ((await record(runId)).webhook?.deliveries?.[0]?.status === 'failed' ? record(runId) : null), { timeoutMs: 10_000, what: 'the refusal' });
    expect(run.webhook.deliveries[0].lastError).toMatch(/the webhook URL's host "localhost" resolves to (127\.0\.0\.1|::1), a loopback address/);
    expect(run.webhook.deliveries[0].lastStatusCode).toBeNull();
  });

  it('lets owners and admins replace the secret; members read it; deliveries are then signed with the new one', async () => {
    const old = await secretOf();
    const member = await seedAccount(service.prisma, { slug: 'member', scopes: ['read', 'run'] });
    await service.prisma.accessToken.update({ where: { id: member.tokenId! }, data: { orgId: service.account.orgId } });
    await service.prisma.membership.create({ data: { userId: member.userId, orgId: service.account.orgId, role: 'member' } });
    expect(await secretOf(member.token)).toBe(old);
    const refused = await jsonCall(service.url, 'POST', '/v1/webhooks/secret', undefined, member.token);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain('only an owner or an admin');

    const rotated = await jsonCall(service.url, 'POST', '/v1/webhooks/secret', undefined, service.account.token);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(old);
    const runId = await startRun({ 'Webhook-Url': `${hooks.url}/ok?run=3` });
    const [delivery] = await eventually(() => (deliveredTo('/ok?run=3', runId).length > 0 ? deliveredTo('/ok?run=3', runId) : null), { timeoutMs: 10_000, what: 'the delivery' });
    expect(verifyWebhook(rotated.body.secret, delivery!.headers, delivery!.body).data.runId).toBe(runId);
    expect(() => verifyWebhook(old, delivery!.headers, delivery!.body)).toThrow(WebhookVerificationError);
  });
});
