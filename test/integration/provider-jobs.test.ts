import type http from 'node:http';
import sharp from 'sharp';
import type { RunEvent } from '../../services/contract';
import { eventually } from '../support/eventually';
import { seedAccount } from '../support/fixtures';
import { startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * A provider job (a fal queue request) outlives the worker that submitted it: the attempt records
 * the job before it waits on it, and the worker that takes the step over from a killed one
 * resumes the job from the record: submitted once, charged once (no lost charge), its result the
 * run's. A job whose record was never written is the old case: charged as lost, submitted again.
 */

const FAL_KEY = 'fal-test-key-0123456789abcdef';
const APP = 'fal-ai/flux/schnell';
const PRICE = 3000;

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** fal's queue API: requests stay IN_PROGRESS until `finish()` (and again after `finish(false)`); the result is one PNG. */
async function startFalFake(): Promise<{ fake: LlmFake; submits: () => number; finish: (done?: boolean) => void }> {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c33' } }).png().toBuffer();
  let finished = false;
  let next = 0;
  const fake = await startLlmFake(async (res, req) => {
    const base = fake.url;
    const path = req.path;
    if (path === '/files/out.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(png);
      return;
    }
    const status = /^\/fal\/requests\/([^/]+)\/status$/.exec(path);
    if (req.method === 'GET' && status) return json(res, 200, finished ? { status: 'COMPLETED' } : { status: 'IN_PROGRESS' });
    if (req.method === 'GET' && /^\/fal\/requests\/[^/]+$/.test(path)) return json(res, 200, { images: [{ url: `${base}/files/out.png` }] });
    if (req.method === 'PUT') return json(res, 202, { status: 'CANCELLATION_REQUESTED' });
    if (req.method === 'POST' && path === `/fal/${APP}`) {
      const id = `req-${(next += 1)}`;
      return json(res, 200, { request_id: id, status_url: `${base}/fal/requests/${id}/status`, response_url: `${base}/fal/requests/${id}`, cancel_url: `${base}/fal/requests/${id}/cancel` });
    }
    json(res, 404, { detail: `no route ${req.method} ${path}` });
  });
  return { fake, submits: () => fake.requests.filter((r) => r.method === 'POST' && r.path === `/fal/${APP}`).length, finish: (done = true) => void (finished = done) };
}

describe('provider jobs resumed by the worker that takes a step over', () => {
  let fal: Awaited<ReturnType<typeof startFalFake>>;
  let api: TestService;

  beforeAll(async () => {
    fal = await startFalFake();
    api = await startTestService({ env: { ROLE: 'api', FAL_KEY, FAL_BASE_URL: `${fal.fake.url}/fal`, FAL_APPS: `${APP}=${PRICE}`, PROVIDER_POLL_MS: '50', STEP_LOCK_MS: '1500' } });
  });
  afterAll(async () => {
    await api?.close();
    await fal?.fake.close();
  });

  it('submits once and charges once when the submitting worker is killed mid-job', async () => {
    const who = await seedAccount(api.prisma, { slug: 'resumed', scopes: ['run', 'read'], balanceMicros: 1_000_000 });
    const doomed = startWorkerProcess(api, { STEP_LOCK_MS: '1500', PROVIDER_POLL_MS: '50' });
    try {
      const workflow = { version: 2, nodes: [{ id: 'draw', uses: 'fal-image', inputs: { prompt: 'a red square', app: APP } }, { id: 'o', uses: 'output', inputs: { value: '${draw.image}' } }] };
      const res = await fetch(`${api.url}/v1/runs`, { method: 'POST', headers: { ...bearer(who.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
      expect(res.status).toBe(200);
      const stream = readSse(res);
      // The job is submitted and recorded with its attempt; the worker is waiting on it.
      const run = await eventually(async () => api.prisma.run.findFirst({ where: { orgId: who.orgId }, include: { steps: true } }), { what: 'the run stored', timeoutMs: 20_000 });
      await eventually(async () => (await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'draw' } })).providerJob !== null, { what: 'the provider job recorded', timeoutMs: 20_000 });
      expect(fal.submits()).toBe(1);
      doomed.kill('SIGKILL');
      await exited(doomed);

      const rescuer = await api.extra({ ROLE: 'worker', STEP_LOCK_MS: '1500', PROVIDER_POLL_MS: '50' });
      try {
        // The rescuer polls the same request (its status asked again) before the provider finishes it.
        const polled = fal.fake.requests.length;
        await eventually(() => fal.fake.requests.length > polled + 2, { what: 'the rescuer polling the recorded request', timeoutMs: 20_000 });
        // Parked on the job: counted as such, holding no slot.
        expect(await rescuer.resources.metrics.registry.getSingleMetricAsString('svc_worker_provider_jobs_parked')).toMatch(/svc_worker_provider_jobs_parked\{[^}]*\} 1/);
        expect(rescuer.worker!.lentSlots).toBe(1);
        fal.finish();
        const events = (await stream).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
        expect(events.at(-1)).toMatchObject({ type: 'run.completed' });
        expect(events.some((e) => e.type === 'step.progress' && /resumed after a worker was lost/.test(e.message))).toBe(true);
        expect(fal.submits()).toBe(1);
        const step = await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'draw' } });
        expect(step).toMatchObject({ status: 'completed', attempt: 2 });
        // One image's price: the lost attempt was not charged its worst case on top.
        expect(Number(step.costMicros)).toBe(PRICE);
        const charged = await api.prisma.ledgerEntry.aggregate({ where: { orgId: who.orgId, kind: 'run_charge' }, _sum: { amountMicros: true } });
        expect(-Number(charged._sum.amountMicros)).toBe(PRICE);
        const org = await api.prisma.organization.findUniqueOrThrow({ where: { id: who.orgId } });
        expect({ balance: Number(org.balanceMicros), held: Number(org.heldMicros) }).toEqual({ balance: 1_000_000 - PRICE, held: 0 });
      } finally {
        await rescuer.close();
      }
    } finally {
      doomed.kill('SIGKILL');
      await exited(doomed);
    }
  });

  it('reaches the recorded job\'s cancel endpoint when the run is cancelled while the rescuer waits on it', async () => {
    const who = await seedAccount(api.prisma, { slug: 'cancelled', scopes: ['run', 'read'], balanceMicros: 1_000_000 });
    fal.finish(false);
    const doomed = startWorkerProcess(api, { STEP_LOCK_MS: '1500', PROVIDER_POLL_MS: '50' });
    const submitsBefore = fal.submits();
    try {
      const workflow = { version: 2, nodes: [{ id: 'draw', uses: 'fal-image', inputs: { prompt: 'a blue square', app: APP } }, { id: 'o', uses: 'output', inputs: { value: '${draw.image}' } }] };
      const res = await fetch(`${api.url}/v1/runs`, { method: 'POST', headers: { ...bearer(who.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
      const stream = readSse(res);
      const run = await eventually(async () => api.prisma.run.findFirst({ where: { orgId: who.orgId } }), { what: 'the run stored', timeoutMs: 20_000 });
      const recorded = await eventually(async () => (await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'draw' } })).providerJob as { job: { cancelUrl: string } } | null, { what: 'the provider job recorded', timeoutMs: 20_000 });
      doomed.kill('SIGKILL');
      await exited(doomed);
      const rescuer = await api.extra({ ROLE: 'worker', STEP_LOCK_MS: '1500', PROVIDER_POLL_MS: '50' });
      try {
        await eventually(async () => (await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'draw' } })).attempt === 2, { what: 'the rescuer taking the step over', timeoutMs: 20_000 });
        // Waiting on the recorded job (polling its status) when the run is cancelled.
        const statusPath = new URL(recorded.job.cancelUrl).pathname.replace(/\/cancel$/, '/status');
        const polls = () => fal.fake.requests.filter((r) => r.path === statusPath).length;
        const before = polls();
        await eventually(() => polls() > before + 1, { what: 'the rescuer polling the recorded job', timeoutMs: 20_000 });
        const cancel = await fetch(`${api.url}/v1/runs/${run.id}/cancel`, { method: 'POST', headers: bearer(who.token) });
        expect(cancel.status).toBeLessThan(300);
        const events = (await stream).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
        expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'cancelled' } });
        const cancelPath = new URL(recorded.job.cancelUrl).pathname;
        await eventually(() => fal.fake.requests.some((r) => r.method === 'PUT' && r.path === cancelPath), { what: 'the recorded cancel URL called', timeoutMs: 10_000 });
        expect(fal.submits()).toBe(submitsBefore + 1);
        // Submitted once, possibly run: charged its worst case once, not twice.
        const step = await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'draw' } });
        expect(Number(step.costMicros)).toBe(PRICE);
      } finally {
        await rescuer.close();
      }
    } finally {
      doomed.kill('SIGKILL');
      await exited(doomed);
    }
  });
});
