import type { ServerResponse } from 'node:http';
import net from 'node:net';
import type { RunEvent } from '../../services/contract';
import { modelPrices } from '../../services/nodes/providers/llm-pricing';
import { openAiChatNode } from '../../services/nodes/providers/openai-chat';
import { tokenPriceTable } from '../../services/platform/setting-parsers';
import { brokenOpenAiStream, errorReply, openAiStream, startLlmFake, type LlmFake, type Reply } from '../support/llm-fake';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * A provider call, once made, is paid; deterministic failures are not retried;
 * a step's attempts are bounded; an organization's balance never goes below zero. Every case
 * counts the fake provider's calls and compares the ledger with the run's spending.
 */

const KEY = 'sk-test-openai-0123456789abcdef';
// fake-model: 1.25 / 5.00 USD per million tokens = 1.25 / 5 micro-USD per token.
const PRICES = 'fake-model=1.25/5.00';
const REPLY_USAGE = { prompt: 10, completion: 5 };
const REPLY_COST = Math.ceil(10 * 1.25 + 5 * 5); // 38 micro-USD

async function post(service: TestService, route: string, body: unknown, token: string): Promise<Response> {
  return fetch(`${service.url}${route}`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

/** The stream's events, and whether it ended with `[DONE]`. */
async function streamOf(res: Response): Promise<{ events: RunEvent[]; done: boolean }> {
  const messages = await readSse(res);
  return { events: messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent), done: messages.at(-1)?.data === '[DONE]' };
}

/** What the organization was charged in all, the run's recorded spending and cap, and the balance. */
async function money(service: TestService, orgId: string, runId?: string) {
  const charges = await service.prisma.ledgerEntry.aggregate({ where: { orgId, kind: 'run_charge', ...(runId ? { runId } : {}) }, _sum: { amountMicros: true } });
  const org = await service.prisma.organization.findUniqueOrThrow({ where: { id: orgId } });
  const run = runId ? await service.prisma.run.findUniqueOrThrow({ where: { id: runId } }) : undefined;
  return {
    charged: 0 - Number(charges._sum.amountMicros ?? 0n) || 0,
    balance: Number(org.balanceMicros),
    held: Number(org.heldMicros),
    spent: run ? Number(run.spentMicros) : undefined,
    cap: run ? Number(run.capMicros) : undefined,
  };
}

/** A step's worst case (what an attempt whose outcome is unknown is charged), priced by the node itself as the service prices it. */
function worstCase(inputs: Record<string, unknown>): number {
  const node = openAiChatNode({ apiKey: KEY, baseUrl: 'http://127.0.0.1/v1', models: ['fake-model'], prices: modelPrices(tokenPriceTable(PRICES)), timeoutMs: 1000 });
  return node.estimate!({ model: 'fake-model', maxTokens: 16, ...inputs });
}

/** A loopback port nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const chat = (inputs: Record<string, unknown>) => ({ id: 'c', uses: 'openai-chat', inputs: { model: 'fake-model', maxTokens: 16, ...inputs } });

describe('paid failures: every provider call is settled, failures end, balances stay positive', () => {
  let fake: LlmFake;
  let reply: Reply;
  let service: TestService;

  beforeAll(async () => {
    reply = openAiStream(['Hello'], REPLY_USAGE);
    fake = await startLlmFake((res, req) => reply(res, req));
    service = await startTestService({
      env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: PRICES, STEP_MAX_ATTEMPTS: '3' },
      balanceMicros: 10_000_000,
    });
  });
  afterAll(async () => {
    await service?.close();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    reply = openAiStream(['Hello'], REPLY_USAGE);
  });

  async function account(balanceMicros: number): Promise<SeededAccount> {
    return seedAccount(service.prisma, { slug: 'paid', scopes: ['run', 'read'], balanceMicros });
  }

  it('runs.node answers the outputs a node produced, without an optional one it did not: one call, charged once', async () => {
    const acct = await account(1_000_000);
    const res = await post(service, '/v1/runs/node', { node: 'openai-chat', inputs: { prompt: 'hi', model: 'fake-model', maxTokens: 16 } }, acct.token);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { outputs: Record<string, unknown> };
    expect(body.outputs.text).toEqual({ kind: 'text', value: 'Hello' });
    expect(body.outputs).not.toHaveProperty('data');
    expect(fake.requests).toHaveLength(1);
    const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: acct.orgId } });
    expect(run.status).toBe('completed');
    expect(await money(service, acct.orgId, run.id)).toMatchObject({ charged: REPLY_COST, spent: REPLY_COST, balance: 1_000_000 - REPLY_COST, held: 0 });
  });

  it('a run output reading an optional port the node did not produce is absent; the run completes', async () => {
    const acct = await account(1_000_000);
    const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'text', uses: 'output', inputs: { value: '${c.text}' } }, { id: 'data', uses: 'output', inputs: { value: '${c.data}' } }] };
    const res = await post(service, '/v1/runs', { workflow }, acct.token);
    expect(res.status).toBe(200);
    const { events, done } = await streamOf(res);
    expect(done).toBe(true);
    const last = events.at(-1)!;
    expect(last).toEqual({ type: 'run.completed', outputs: { text: { kind: 'text', value: 'Hello' } } });
    expect(fake.requests).toHaveLength(1);
    expect((await money(service, acct.orgId)).charged).toBe(REPLY_COST);
  });

  it('a required input reading a missing output fails the run with missing_output, once, and the call that ran is charged', async () => {
    const acct = await account(1_000_000);
    const workflow = {
      version: 2,
      nodes: [chat({ prompt: 'hi' }), { id: 'x', uses: 'json-extract', inputs: { data: '${c.data}', path: 'a' } }, { id: 'o', uses: 'output', inputs: { value: '${x.value}' } }],
    };
    const res = await post(service, '/v1/runs', { workflow }, acct.token);
    expect(res.status).toBe(200);
    const { events, done } = await streamOf(res);
    expect(done).toBe(true);
    const failed = events.at(-1)!;
    expect(failed).toMatchObject({ type: 'run.failed', error: { code: 'missing_output' } });
    expect((failed as { error: { message: string } }).error.message).toContain('"c"');
    expect((failed as { error: { message: string } }).error.message).toContain('"data"');
    expect(fake.requests).toHaveLength(1);
    const runId = (events[0] as { runId?: string }).runId ?? (await service.prisma.run.findFirstOrThrow({ where: { orgId: acct.orgId } })).id;
    expect(await money(service, acct.orgId, runId)).toMatchObject({ charged: REPLY_COST, spent: REPLY_COST, held: 0 });
  });

  it('an answer that fails its schema check is charged and not retried', async () => {
    const acct = await account(1_000_000);
    reply = openAiStream(['not json'], REPLY_USAGE);
    const workflow = { version: 2, nodes: [chat({ prompt: 'hi', schema: { type: 'object' } }), { id: 'o', uses: 'output', inputs: { value: '${c.data}' } }] };
    const { events, done } = await streamOf(await post(service, '/v1/runs', { workflow }, acct.token));
    expect(done).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run.failed' });
    expect(fake.requests).toHaveLength(1);
    const m = await money(service, acct.orgId);
    expect(m.charged).toBeGreaterThan(0);
    expect(m.held).toBe(0);
  });

  /** An API-only service on its own database, sharing the fake provider: its steps run only on the workers a test starts. */
  async function apiOnly(): Promise<{ api: TestService; who: SeededAccount }> {
    const api = await startTestService({ env: { ROLE: 'api', OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: PRICES } });
    const who = await seedAccount(api.prisma, { slug: 'apionly', scopes: ['run'], balanceMicros: 1_000_000 });
    return { api, who };
  }

  it('a step whose settlement keeps failing after the provider answered is attempted a bounded number of times, each call paid', async () => {
    const { api, who } = await apiOnly();
    // Our own infrastructure failing after every call (the commit throws): BullMQ redelivers the job, each delivery takes the step over.
    const worker = startWorkerProcess(api, { SVC_FAILPOINTS: 'step.beforeSettle=throw(database gone)', STEP_MAX_ATTEMPTS: '3' });
    try {
      const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
      const res = await post(api, '/v1/runs', { workflow }, who.token);
      expect(res.status).toBe(200);
      const { events, done } = await streamOf(res);
      expect(done).toBe(true);
      expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'step_attempts_exhausted' } });
      expect(fake.requests).toHaveLength(3);
      const run = await api.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId } });
      const m = await money(api, who.orgId, run.id);
      // Each of the three calls is charged its worst case (its cost was never learnt), and the run stays within its cap.
      expect(m.charged).toBe(m.spent);
      expect(m.charged % 3).toBe(0);
      expect(m.charged / 3).toBeGreaterThanOrEqual(REPLY_COST);
      expect(m.spent!).toBeLessThanOrEqual(m.cap!);
      expect(m).toMatchObject({ held: 0, balance: 1_000_000 - m.charged });
    } finally {
      worker.kill('SIGKILL');
      await exited(worker);
      await api.close();
    }
  }, 60_000);

  // Fault suite R5 found both: the provider bills a call it answered however its stream ends, yet
  // the broken attempt was charged nothing; and a call answered into a partition (billed) timed
  // out here and was sent again inside the same attempt, uncharged.
  it.each<[string, (res: ServerResponse, model: unknown) => void]>([
    [
      'a stream that breaks off after the provider answered',
      (res, model) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] })}\n\n`);
        setTimeout(() => res.socket?.destroy(), 20);
      },
    ],
    ['a request that breaks once sent (not sent again inside its attempt)', (res) => res.socket?.destroy()],
  ])('%s is charged its worst case, and the next attempt what it cost', async (_what, breakCall) => {
    const who = await account(1_000_000);
    const healthy = reply;
    let calls = 0;
    reply = async (res, req) => {
      calls += 1;
      if (calls > 1) return healthy(res, req);
      breakCall(res, req.body.model);
    };
    const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
    const { events, done } = await streamOf(await post(service, '/v1/runs', { workflow }, who.token));
    expect(done).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run.completed', outputs: { o: { kind: 'text', value: 'Hello' } } });
    expect(fake.requests).toHaveLength(2);
    const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId }, include: { steps: true } });
    expect(run.steps.find((step) => step.nodeId === 'c')).toMatchObject({ status: 'completed', attempt: 2 });
    const estimate = worstCase({ prompt: 'hi' });
    expect(estimate).toBeGreaterThan(REPLY_COST);
    // The broken call at its worst case (the step's estimate), the answered one at its price.
    const m = await money(service, who.orgId, run.id);
    expect(m.charged).toBe(estimate + REPLY_COST);
    expect(m).toMatchObject({ spent: m.charged, held: 0, balance: 1_000_000 - m.charged });
  });

  // The fake answered 200, streamed a chunk, then `data: {not json`; the step was
  // retried, the provider called 3 times (each call answered) and the run charged 0.
  it('a stream that breaks its own format is charged its worst case, is not called again, and fails the run malformed_provider_response', async () => {
    const who = await account(1_000_000);
    reply = brokenOpenAiStream(['Hel'], 'malformed');
    const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
    const { events, done } = await streamOf(await post(service, '/v1/runs', { workflow }, who.token));
    expect(done).toBe(true);
    expect(events.at(-1)).toEqual({ type: 'run.failed', error: { code: 'malformed_provider_response', message: 'openai sent a malformed answer: a stream event that is not JSON: {not json' } });
    expect(fake.requests).toHaveLength(1);
    const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId } });
    // Answered, and unpriced (no usage came): the call is charged the step's worst case.
    const estimate = worstCase({ prompt: 'hi' });
    expect(await money(service, who.orgId, run.id)).toMatchObject({ charged: estimate, spent: estimate, held: 0, balance: 1_000_000 - estimate });
  });

  // A permanent 5xx was called 9 times a step (3 HTTP tries × 3 step attempts). The HTTP
  // client's tries (PROVIDER_HTTP_TRIES, 3) are now the one bound; a status it does not retry is sent once.
  it.each<[number, string, number]>([
    [500, 'unavailable', 3],
    [429, 'rate_limited', 3],
    [401, 'unavailable', 1],
  ])('a provider answering %d to every call fails the run %s after %d calls in all, charged nothing', async (status, code, calls) => {
    const who = await account(1_000_000);
    reply = errorReply(status, { message: `failing with ${status} on purpose`, type: 'server_error' }, { 'retry-after': '0' });
    const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
    const { events, done } = await streamOf(await post(service, '/v1/runs', { workflow }, who.token));
    expect(done).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code, message: expect.stringContaining(`failing with ${status} on purpose`) } });
    expect(fake.requests).toHaveLength(calls);
    const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId } });
    // Refused before any answer: nothing is charged however often it was tried.
    expect(await money(service, who.orgId, run.id)).toMatchObject({ charged: 0, spent: 0, held: 0, balance: 1_000_000 });
  });

  it('a request whose connection was never made is retried inside its attempt, uncharged', async () => {
    const api = await startTestService({ env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: PRICES } });
    const who = await seedAccount(api.prisma, { slug: 'refused', scopes: ['run'], balanceMicros: 1_000_000 });
    try {
      const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
      const { events, done } = await streamOf(await post(api, '/v1/runs', { workflow }, who.token));
      expect(done).toBe(true);
      expect(events.at(-1)).toMatchObject({ type: 'run.failed' });
      const run = await api.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId } });
      // Nothing reached a provider, so nothing is charged, however often it was tried.
      expect((await money(api, who.orgId, run.id)).charged).toBe(0);
    } finally {
      await api.close();
    }
  });

  it('a worker that dies after the call: the lost call is charged its estimate, the step runs again, the ledger matches', async () => {
    const { api, who } = await apiOnly();
    const doomed = startWorkerProcess(api, { SVC_FAILPOINTS: 'step.beforeSettle=exit(137)', STEP_LOCK_MS: '1500' });
    try {
      const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
      const res = await post(api, '/v1/runs', { workflow }, who.token);
      expect(res.status).toBe(200);
      const stream = streamOf(res);
      await exited(doomed);
      expect(fake.requests).toHaveLength(1);
      const rescuer = await api.extra({ ROLE: 'worker', STEP_LOCK_MS: '1500' });
      try {
        const { events, done } = await stream;
        expect(done).toBe(true);
        expect(events.at(-1)).toMatchObject({ type: 'run.completed' });
        expect(fake.requests).toHaveLength(2);
        const run = await api.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId }, include: { steps: true } });
        const m = await money(api, who.orgId, run.id);
        // The lost call's worst case plus the second call's price, in the ledger and in the run.
        expect(m.charged).toBe(m.spent);
        expect(m.charged).toBeGreaterThan(2 * REPLY_COST);
        expect(run.steps.find((s) => s.nodeId === 'c')).toMatchObject({ status: 'completed', attempt: 2 });
        expect(m).toMatchObject({ held: 0, balance: 1_000_000 - m.charged });
      } finally {
        await rescuer.close();
      }
    } finally {
      doomed.kill('SIGKILL');
      await exited(doomed);
      await api.close();
    }
  }, 60_000);

  it('a run whose hold on the balance cannot cover a step fails with insufficient_credit before the provider is called', async () => {
    const acct = await account(30); // less than one openai-chat call's worst case
    const workflow = { version: 2, nodes: [chat({ prompt: 'hi' }), { id: 'o', uses: 'output', inputs: { value: '${c.text}' } }] };
    const res = await post(service, '/v1/runs', { workflow }, acct.token);
    expect(res.status).toBe(200);
    const { events, done } = await streamOf(res);
    expect(done).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'insufficient_credit' } });
    expect(fake.requests).toHaveLength(0);
    expect(await money(service, acct.orgId)).toEqual({ charged: 0, balance: 30, held: 0, spent: undefined, cap: undefined });
  });

  it('many concurrent runs never take a balance below zero: each is admitted against what is not held, or refused with 402', async () => {
    const acct = await account(2_000);
    const workflow = { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 1, b: 2 } }, { id: 'b', uses: 'math-multiply', inputs: { a: '${a.result}', b: 3 } }, { id: 'o', uses: 'output', inputs: { value: '${b.result}' } }] };
    const answers = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const res = await post(service, '/v1/runs', { workflow, maxCostUsd: 0.0001 }, acct.token);
        if (res.status !== 200) return { status: res.status, body: (await res.json()) as { code?: string; balanceUsd?: number } };
        return { status: 200, stream: await streamOf(res) };
      }),
    );
    for (const answer of answers) {
      expect([200, 402]).toContain(answer.status);
      if (answer.status === 402) expect(answer.body).toMatchObject({ code: 'insufficient_credit' });
      else {
        expect(answer.stream!.done).toBe(true);
        expect(['run.completed', 'run.failed']).toContain(answer.stream!.events.at(-1)!.type);
      }
    }
    expect(answers.some((a) => a.status === 200)).toBe(true);
    const m = await money(service, acct.orgId);
    expect(m.balance).toBeGreaterThanOrEqual(0);
    expect(m.balance).toBe(2_000 - m.charged);
    expect(m.held).toBe(0);
  });

  it('refuses to let anything push a balance below zero (the database itself refuses)', async () => {
    const acct = await account(5);
    await expect(service.prisma.$executeRaw`UPDATE organizations SET balance_micros = balance_micros - 6 WHERE id = ${acct.orgId}::uuid`).rejects.toThrow(/must not be negative/);
  });
});
