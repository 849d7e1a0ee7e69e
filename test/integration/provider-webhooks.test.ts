import type http from 'node:http';
import sharp from 'sharp';
import type { RunEvent } from '../../services/contract';
import type { ServiceRuntime } from '../../services/composition';
import { eventually } from '../support/eventually';
import { seedAccount } from '../support/fixtures';
import { startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';
import { providerJobKey, ProviderWebhookUrls } from '../../services/platform/provider-webhook-urls';

/**
 * With PROVIDER_WEBHOOK_BASE_URL set, fal and Replicate are given a signed URL with each job and
 * call it when the job ends: the step waiting on the job polls at once instead of on its timer
 * (here an hour away, so a step that completes was woken by the webhook). The call is only a
 * wake-up: the step asks the provider for the outcome, so a call before the end changes nothing.
 */

const FAL_APP = 'fal-ai/flux/schnell';
const REPLICATE_MODEL = 'acme/painter';
const PRICE = 3000;

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * fal's queue API and Replicate's predictions: every job runs until `finish()`, which ends them
 * all and calls each one's webhook as the providers do (fal: its result envelope; Replicate: the
 * prediction).
 */
async function startProviders(): Promise<{ fake: LlmFake; webhooks: string[]; finish(): Promise<number[]>; polls(): number }> {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3c3' } }).png().toBuffer();
  let finished = false;
  let next = 0;
  const webhooks: string[] = [];
  const prediction = (id: string, base: string) => ({
    id,
    status: finished ? 'succeeded' : 'processing',
    output: finished ? [`${base}/files/out.png`] : null,
    error: null,
    urls: { get: `${base}/replicate/v1/predictions/${id}`, cancel: `${base}/replicate/v1/predictions/${id}/cancel` },
  });
  const fake = await startLlmFake(async (res, req) => {
    const base = fake.url;
    const url = new URL(req.path, base);
    const path = url.pathname;
    if (path === '/files/out.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(png);
      return;
    }
    if (req.method === 'POST' && path === `/fal/${FAL_APP}`) {
      const id = `fal-${(next += 1)}`;
      webhooks.push(url.searchParams.get('fal_webhook') ?? '');
      return json(res, 200, { request_id: id, status_url: `${base}/fal/requests/${id}/status`, response_url: `${base}/fal/requests/${id}`, cancel_url: `${base}/fal/requests/${id}/cancel` });
    }
    if (req.method === 'GET' && /^\/fal\/requests\/[^/]+\/status$/.test(path)) return json(res, 200, { status: finished ? 'COMPLETED' : 'IN_PROGRESS' });
    if (req.method === 'GET' && /^\/fal\/requests\/[^/]+$/.test(path)) return json(res, 200, { images: [{ url: `${base}/files/out.png` }] });
    if (req.method === 'POST' && path === `/replicate/v1/models/${REPLICATE_MODEL}/predictions`) {
      const id = `rep-${(next += 1)}`;
      webhooks.push(typeof req.body.webhook === 'string' ? req.body.webhook : '');
      expect(req.body.webhook_events_filter).toEqual(['completed']);
      return json(res, 201, prediction(id, base));
    }
    const got = /^\/replicate\/v1\/predictions\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && got) return json(res, 200, prediction(got[1]!, base));
    if (req.method === 'PUT' || path.endsWith('/cancel')) return json(res, 202, {});
    json(res, 404, { detail: `no route ${req.method} ${path}` });
  });
  return {
    fake,
    webhooks,
    polls: () => fake.requests.filter((r) => r.method === 'GET' && (/\/status$/.test(r.path) || /\/predictions\/[^/]+$/.test(r.path))).length,
    async finish() {
      finished = true;
      return Promise.all(webhooks.map(async (hook) => (await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'OK', payload: { images: [] } }) })).status));
    },
  };
}

/** The providers pointed at the fake; polls an hour apart, so only a webhook ends a wait. */
function providerEnv(fakeUrl: string): Record<string, string> {
  return {
    FAL_KEY: 'fal-test-key-0123456789abcdef',
    FAL_BASE_URL: `${fakeUrl}/fal`,
    FAL_APPS: `${FAL_APP}=${PRICE}`,
    REPLICATE_API_TOKEN: 'r8_test_token_0123456789abcdef',
    REPLICATE_BASE_URL: `${fakeUrl}/replicate`,
    REPLICATE_MODELS: `${REPLICATE_MODEL}=${PRICE}`,
    PROVIDER_POLL_MS: '60000',
    PROVIDER_WEBHOOK_POLL_SECONDS: '3600',
  };
}

describe('provider webhooks bring a parked job\'s poll forward', () => {
  let providers: Awaited<ReturnType<typeof startProviders>>;
  let api: TestService;
  let worker: ServiceRuntime;

  beforeAll(async () => {
    providers = await startProviders();
    api = await startTestService({ env: { ROLE: 'api', ...providerEnv(providers.fake.url) } });
    worker = await api.extra({ ROLE: 'worker', PROVIDER_WEBHOOK_BASE_URL: api.url });
  });
  afterAll(async () => {
    await api?.close();
    await providers?.fake.close();
  });

  it('completes fal and Replicate jobs when their providers call back, polling each once more', async () => {
    const who = await seedAccount(api.prisma, { slug: 'hooked', scopes: ['run', 'read'], balanceMicros: 1_000_000 });
    const workflow = {
      version: 2,
      nodes: [
        { id: 'fal', uses: 'fal-image', inputs: { prompt: 'a green square', app: FAL_APP } },
        { id: 'rep', uses: 'replicate-image', inputs: { prompt: 'a green square', model: REPLICATE_MODEL } },
        { id: 'a', uses: 'output', inputs: { value: '${fal.image}' } },
        { id: 'b', uses: 'output', inputs: { value: '${rep.image}' } },
      ],
    };
    const res = await fetch(`${api.url}/v1/runs`, { method: 'POST', headers: { ...bearer(who.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
    expect(res.status).toBe(200);
    const stream = readSse(res);
    await eventually(() => providers.webhooks.length === 2, { what: 'both jobs submitted', timeoutMs: 20_000 });
    for (const hook of providers.webhooks) expect(hook).toMatch(new RegExp(`^${api.url}/hooks/providers/(fal|replicate)/[0-9a-f]{32}/[A-Za-z0-9_-]+$`));
    // Both parked on the worker's one poll timer.
    await eventually(() => worker.worker!.lentSlots === 2, { what: 'both steps parked', timeoutMs: 10_000 });
    const pollsBefore = providers.polls();

    // A call before the job ended (a replay, say) makes the step ask once more, and it goes on waiting.
    expect((await fetch(providers.webhooks[0]!, { method: 'POST', body: '{}' })).status).toBe(200);
    await eventually(() => providers.polls() === pollsBefore + 1, { what: 'the early call answered by one poll', timeoutMs: 10_000 });
    expect(worker.worker!.lentSlots).toBe(2);

    expect(await providers.finish()).toEqual([200, 200]);
    const events = (await stream).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
    expect(events.at(-1)).toMatchObject({ type: 'run.completed' });
    // One poll each after its webhook: nothing polled on the (hour-long) timer.
    expect(providers.polls()).toBe(pollsBefore + 3);
    const counted = await api.metrics.registry.getSingleMetricAsString('svc_provider_webhooks_total');
    expect(counted).toMatch(/svc_provider_webhooks_total\{[^}]*provider="fal"[^}]*outcome="woke"[^}]*\} 2/);
    expect(counted).toMatch(/svc_provider_webhooks_total\{[^}]*provider="replicate"[^}]*outcome="woke"[^}]*\} 1/);
    const steps = await api.prisma.step.findMany({ where: { run: { orgId: who.orgId }, nodeId: { in: ['fal', 'rep'] } } });
    expect(steps.map((s) => [s.status, Number(s.costMicros)])).toEqual([['completed', PRICE], ['completed', PRICE]]);
  });

  it('refuses a callback URL it did not sign (403) and a provider that does not call back (404), with messages', async () => {
    const signed = providers.webhooks[0] ?? `${api.url}/hooks/providers/fal/${'0'.repeat(32)}/x`;
    const forged = signed.replace(/\/[A-Za-z0-9_-]+$/, '/forged-signature');
    const refused = await fetch(forged, { method: 'POST', body: '{}' });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/not signed by this service/);
    const other = await fetch(signed.replace('/providers/fal/', '/providers/replicate/'), { method: 'POST', body: '{}' });
    expect(other.status).toBe(403);
    const unknown = await fetch(signed.replace('/providers/fal/', '/providers/openai/'), { method: 'POST', body: '{}' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toMatch(/provider webhooks are for fal and replicate/);
    const counted = await api.metrics.registry.getSingleMetricAsString('svc_provider_webhooks_total');
    expect(counted).toMatch(/outcome="refused"[^}]*\} 1/);
  });
});

describe('a Replicate prediction outlives the worker that created it', () => {
  let providers: Awaited<ReturnType<typeof startProviders>>;
  let api: TestService;

  beforeAll(async () => {
    providers = await startProviders();
    api = await startTestService({ env: { ROLE: 'api', ...providerEnv(providers.fake.url), STEP_LOCK_MS: '1500' } });
  });
  afterAll(async () => {
    await api?.close();
    await providers?.fake.close();
  });

  it('is resumed from its record by the worker that takes the step over, created and charged once, and its webhook wakes that worker', async () => {
    const who = await seedAccount(api.prisma, { slug: 'predicted', scopes: ['run', 'read'], balanceMicros: 1_000_000 });
    const hooks = { PROVIDER_WEBHOOK_BASE_URL: api.url, STEP_LOCK_MS: '1500' };
    const doomed = startWorkerProcess(api, hooks);
    try {
      const workflow = { version: 2, nodes: [{ id: 'rep', uses: 'replicate-image', inputs: { prompt: 'a green square', model: REPLICATE_MODEL } }, { id: 'o', uses: 'output', inputs: { value: '${rep.image}' } }] };
      const res = await fetch(`${api.url}/v1/runs`, { method: 'POST', headers: { ...bearer(who.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
      expect(res.status).toBe(200);
      const stream = readSse(res);
      const run = await eventually(async () => api.prisma.run.findFirst({ where: { orgId: who.orgId } }), { what: 'the run stored', timeoutMs: 20_000 });
      const recorded = await eventually(async () => (await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'rep' } })).providerJob as { job: { getUrl: string } } | null, {
        what: 'the prediction recorded',
        timeoutMs: 20_000,
      });
      expect(providers.webhooks).toHaveLength(1);
      doomed.kill('SIGKILL');
      await exited(doomed);

      const rescuer = await api.extra({ ROLE: 'worker', ...hooks });
      try {
        // The rescuer reads the recorded prediction (no second create), then waits on it.
        const getPath = new URL(recorded.job.getUrl).pathname;
        await eventually(() => providers.fake.requests.filter((r) => r.method === 'GET' && new URL(r.path, providers.fake.url).pathname === getPath).length >= 1, { what: 'the rescuer reading the recorded prediction', timeoutMs: 20_000 });
        await eventually(() => rescuer.worker!.lentSlots === 1, { what: 'the rescuer parked on the prediction', timeoutMs: 10_000 });
        // The URL Replicate was given by the dead worker reaches the rescuer.
        expect(await providers.finish()).toEqual([200]);
        const events = (await stream).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
        expect(events.at(-1)).toMatchObject({ type: 'run.completed' });
        expect(events.some((e) => e.type === 'step.progress' && /replicate prediction .* resumed after a worker was lost/.test(e.message))).toBe(true);
        const creates = providers.fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/predictions')).length;
        expect(creates).toBe(1);
        const step = await api.prisma.step.findFirstOrThrow({ where: { runId: run.id, nodeId: 'rep' } });
        expect({ status: step.status, attempt: step.attempt, cost: Number(step.costMicros) }).toEqual({ status: 'completed', attempt: 2, cost: PRICE });
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
});

describe('provider webhooks and the per-IP limit', () => {
  let api: TestService;

  beforeAll(async () => {
    api = await startTestService({ env: { RATE_LIMIT_IP_PER_MINUTE: '3' } });
  });
  afterAll(async () => {
    await api?.close();
  });

  it("are not counted against a provider's address: its many customers' calls come from a few", async () => {
    const urls = new ProviderWebhookUrls({ baseUrl: api.url, secret: api.config.blobSigningSecret });
    const hook = urls.urlFor('fal', providerJobKey('a-run', 'a-node'));
    const answered: number[] = [];
    for (let i = 0; i < 10; i++) answered.push((await fetch(hook, { method: 'POST', body: '{}' })).status);
    expect(answered).toEqual(Array(10).fill(200));
    // The same address's other requests are limited as ever.
    const limited: number[] = [];
    for (let i = 0; i < 5; i++) limited.push((await fetch(`${api.url}/v1/nodes`)).status);
    expect(limited).toContain(429);
  });
});
