import type { RunEvent } from '../../services/contract';
import { eventually } from '../support/eventually';
import { seedAccount } from '../support/fixtures';
import { errorReply, openAiStream, startLlmFake, type LlmFake, type Reply } from '../support/llm-fake';
import type { ServiceRuntime } from '../../services/composition';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * Provider work at scale, through a real service: a step waiting on a provider lends its worker
 * slot back and holds no Postgres connection; the providers' stated limits hold across workers;
 * a 429 pauses every worker calling that provider; `queue.get` and the run's stream say what a
 * step waits for.
 */

const KEY = 'sk-test-openai-0123456789abcdef';
const PRICES = 'fake-model=1.25/5.00';
const REPLY = openAiStream(['Hello'], { prompt: 10, completion: 5 });

const chatWorkflow = { version: 2, nodes: [{ id: 'c', uses: 'openai-chat', inputs: { prompt: 'hi', model: 'fake-model', maxTokens: 16 } }, { id: 'out', uses: 'output', inputs: { value: '${c.text}' } }] };

/** A fake whose answers wait until `open()`; it counts the calls in flight. */
function heldFake() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = { inFlight: 0, peak: 0 };
  const reply: Reply = async (res, req) => {
    state.inFlight++;
    state.peak = Math.max(state.peak, state.inFlight);
    try {
      await gate;
      await REPLY(res, req);
    } finally {
      state.inFlight--;
    }
  };
  return {
    state,
    reply,
    open: () => release(),
  };
}

/** Starts `n` runs of the chat workflow; resolves with their streams' events once all have ended. */
function startRuns(service: TestService, token: string, n: number): Promise<RunEvent[][]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow: chatWorkflow }) });
      expect(res.status).toBe(200);
      return (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
    }),
  );
}

describe('steps waiting on a provider', () => {
  let fake: LlmFake;
  let held: ReturnType<typeof heldFake>;
  let service: TestService;

  beforeAll(async () => {
    held = heldFake();
    fake = await startLlmFake((res, req) => held.reply(res, req));
    service = await startTestService({
      // A window of 2 jobs and no timer's pump within the test: only refills when slots are lent keep the workers fed.
      env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: PRICES, WORKER_CONCURRENCY: '2', PROVIDER_STEP_CONCURRENCY: '100', FAIR_DISPATCH_WINDOW: '2', FAIR_RECONCILE_MS: '60000' },
    });
  });
  afterAll(async () => {
    held?.open();
    await service?.close();
    await fake?.close();
  });

  it('wait beyond the worker\'s slots, each holding no slot and no Postgres connection', async () => {
    const runs = startRuns(service, service.account.token, 12);
    // Two slots, twelve calls at the provider at once: each waiting step gave its slot back.
    await eventually(() => held.state.inFlight === 12, { what: '12 calls in flight', timeoutMs: 20_000 });
    expect(service.runtime.worker!.lentSlots).toBe(12);
    const { pool } = service.runtime.resources.database;
    // Every connection the process opened is idle while its steps wait on the provider.
    expect(pool.totalCount - pool.idleCount).toBe(0);
    const text = await service.runtime.resources.metrics.registry.getSingleMetricAsString('svc_worker_provider_waits');
    expect(text).toMatch(/svc_worker_provider_waits\{[^}]*\} 12/);
    held.open();
    const events = await runs;
    for (const run of events) expect(run.at(-1)).toMatchObject({ type: 'run.completed', outputs: { out: { kind: 'text', value: 'Hello' } } });
    expect(service.runtime.worker!.lentSlots).toBe(0);
  });
});

describe('provider limits shared by the workers', () => {
  let fake: LlmFake;
  let reply: Reply;
  let service: TestService;
  const state = { inFlight: 0, peak: 0 };
  /** The second worker (the first test starts it): each worker has its own metrics. */
  let extraWorker: ServiceRuntime | undefined;

  beforeAll(async () => {
    reply = REPLY;
    fake = await startLlmFake(async (res, req) => {
      state.inFlight++;
      state.peak = Math.max(state.peak, state.inFlight);
      try {
        await reply(res, req);
      } finally {
        state.inFlight--;
      }
    });
    service = await startTestService({
      env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: PRICES, PROVIDER_LIMITS: 'openai: calls=2' },
    });
  });
  afterAll(async () => {
    await service?.close();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    state.peak = 0;
  });

  it('holds the concurrent calls across two workers (each with its own limiter and connections), says why a step waits, and completes every run', async () => {
    extraWorker = await service.extra({ ROLE: 'worker', METRICS_PORT: '0' });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    reply = async (res, req) => {
      await gate;
      await REPLY(res, req);
    };
    const acct = await seedAccount(service.prisma, { slug: 'limited', scopes: ['run', 'read'], balanceMicros: 10_000_000 });
    const runs = startRuns(service, acct.token, 6);
    await eventually(() => state.inFlight === 2, { what: '2 calls in flight', timeoutMs: 20_000 });
    // The rest wait for a call to end: queue.get says so.
    await eventually(
      async () => {
        const queue = (await (await fetch(`${service.url}/v1/queue`, { headers: bearer(acct.token) })).json()) as { providerLimits: { provider: string; waitingSteps: number; blockedBy: string | null }[] };
        const openai = queue.providerLimits.find((l) => l.provider === 'openai');
        return openai?.waitingSteps === 4 && openai.blockedBy === 'calls';
      },
      { what: 'queue.get naming 4 steps waiting on openai\'s concurrent calls', timeoutMs: 10_000 },
    );
    // Held over a second: their streams say what they wait for.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    release();
    const events = await runs;
    reply = REPLY;
    for (const run of events) expect(run.at(-1)).toMatchObject({ type: 'run.completed' });
    expect(state.peak).toBe(2);
    expect(fake.requests).toHaveLength(6);
    const waited = events.flat().filter((e) => e.type === 'step.progress' && /waiting for openai's limit \(concurrent calls\)/.test(e.message));
    expect(waited.length).toBeGreaterThanOrEqual(1);
  });

  it('pauses every worker for a 429\'s Retry-After: no call reaches the provider until it has passed', async () => {
    let refused = false;
    let refusedAt = 0;
    reply = async (res, req) => {
      if (!refused) {
        refused = true;
        refusedAt = Date.now();
        await errorReply(429, { message: 'slow down', type: 'rate_limit_error' }, { 'retry-after': '2' })(res, req);
        return;
      }
      await REPLY(res, req);
    };
    const acct = await seedAccount(service.prisma, { slug: 'paused', scopes: ['run', 'read'], balanceMicros: 10_000_000 });
    const first = startRuns(service, acct.token, 1);
    await eventually(() => refused, { what: 'the 429', timeoutMs: 10_000 });
    const others = startRuns(service, acct.token, 4);
    const events = [...(await first), ...(await others)];
    reply = REPLY;
    for (const run of events) expect(run.at(-1)).toMatchObject({ type: 'run.completed' });
    const after = fake.requests.filter((r) => r.at > refusedAt);
    expect(after).toHaveLength(5);
    // Retry-After: 2 s, on the provider's clock and ours alike (one machine); 50 ms for the
    // resolution of the two clocks' readings.
    for (const request of after) expect(request.at - refusedAt).toBeGreaterThanOrEqual(2_000 - 50);
    // Counted by the worker whose call met the 429, whichever of the two it was.
    const slowdowns = await Promise.all([service.runtime, extraWorker].map((r) => r?.resources.metrics.registry.getSingleMetricAsString('svc_provider_slowdowns_total') ?? ''));
    expect(slowdowns.join('\n')).toMatch(/provider="openai",reason="retry_after"/);
  });

  it('obeys a remaining-requests header at 0 until its reset, fleet-wide, and ignores one that makes no sense', async () => {
    let answered = 0;
    let spentAt = 0;
    reply = async (res, req) => {
      answered++;
      if (answered === 1) {
        // Spent: the next call must wait for the reset (1.5 s).
        spentAt = Date.now();
        res.setHeader('x-ratelimit-remaining-requests', '0');
        res.setHeader('x-ratelimit-reset-requests', '1.5s');
      } else {
        // Nonsense: a remaining count below zero and a reset in a hundred days.
        res.setHeader('x-ratelimit-remaining-requests', '-3');
        res.setHeader('x-ratelimit-reset-requests', '2400h');
      }
      await REPLY(res, req);
    };
    const acct = await seedAccount(service.prisma, { slug: 'headers', scopes: ['run', 'read'], balanceMicros: 10_000_000 });
    await startRuns(service, acct.token, 1);
    const afterSpent = await startRuns(service, acct.token, 3);
    const nonsense = Date.now();
    const afterNonsense = await startRuns(service, acct.token, 2);
    reply = REPLY;
    for (const run of [...afterSpent, ...afterNonsense]) expect(run.at(-1)).toMatchObject({ type: 'run.completed' });
    const later = fake.requests.filter((r) => r.at > spentAt);
    expect(later).toHaveLength(5);
    for (const request of later.slice(0, 3)) expect(request.at - spentAt).toBeGreaterThanOrEqual(1_500 - 50);
    // The nonsense paused nothing: the last two went out as soon as they were started (well inside the 100 days).
    for (const request of later.slice(3)) expect(request.at - nonsense).toBeLessThan(60_000);
  });
});
