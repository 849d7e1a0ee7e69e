import sharp from 'sharp';
import type { Artifact, RunEvent } from '../../services/contract';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * Output caching (docs/runs.md "Output caching"), through the whole service: a
 * deterministic image utility answered from the cache on its second identical run (nothing
 * charged, `usage.cached: true`), a miss after an input change or in another organization, LLM
 * calls at temperature 0 cached only when the caller asks (`Output-Cache: llm`, counted at a fake
 * of OpenAI's chat API), `Output-Cache: off`, and the per-organization bound's eviction.
 */

const OPENAI_KEY = 'sk-test-openai-0123456789abcdef';

type Completed = Extract<RunEvent, { type: 'step.completed' }>;

let fake: LlmFake;
let service: TestService;
let other: SeededAccount;

beforeAll(async () => {
  fake = await startLlmFake(openAiStream(['the ', 'answer'], { prompt: 100, completion: 20 }));
  service = await startTestService({
    env: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: 'fake-model=1.25/5.00', OUTPUT_CACHE_MAX_ENTRIES: '2' },
  });
  other = await seedAccount(service.prisma, { slug: 'other', scopes: ['read', 'run'], balanceMicros: 100_000_000 });
}, 60_000);
afterAll(async () => {
  await service?.close();
  await fake?.close();
});

async function upload(png: Buffer, token = service.account.token): Promise<Artifact> {
  const res = await fetch(`${service.url}/v1/uploads`, { method: 'POST', headers: { ...bearer(token), 'Content-Type': 'image/png' }, body: png });
  expect(res.status).toBe(201);
  return (await res.json()) as Artifact;
}

const png = (color: string) => sharp({ create: { width: 3, height: 2, channels: 3, background: color } }).png().toBuffer();

/** Runs a workflow to its end; answers the run's id and its steps' `step.completed` events by node. */
async function run(workflow: unknown, inputs: Record<string, unknown> = {}, options: { headers?: Record<string, string>; token?: string } = {}) {
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { ...bearer(options.token ?? service.account.token), 'Content-Type': 'application/json', ...options.headers },
    body: JSON.stringify({ workflow, inputs }),
  });
  expect(res.status).toBe(200);
  const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
  expect(events.at(-1)!.type).toBe('run.completed');
  const started = events.find((e): e is Extract<RunEvent, { type: 'run.started' }> => e.type === 'run.started')!;
  const completed = new Map(events.filter((e): e is Completed => e.type === 'step.completed').map((e) => [e.nodeId, e]));
  const outputs = (events.at(-1) as Extract<RunEvent, { type: 'run.completed' }>).outputs;
  return { runId: started.runId, completed, outputs };
}

/** What Postgres recorded a step cost, micro-USD. */
async function stepCost(runId: string, nodeId: string): Promise<number> {
  const step = await service.prisma.step.findUniqueOrThrow({ where: { runId_nodeId: { runId, nodeId } } });
  return Number(step.costMicros);
}

const metadataWorkflow = {
  version: 2,
  nodes: [
    { id: 'img', uses: 'input', outputType: 'IMAGE' },
    { id: 'meta', uses: 'image-metadata', inputs: { image: '${img.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${meta.metadata}' } },
  ],
};

const chatWorkflow = (temperature: number) => ({
  version: 2,
  nodes: [
    { id: 'chat', uses: 'openai-chat', inputs: { prompt: 'Say the answer', temperature } },
    { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } },
  ],
});

const entries = (orgId = service.account.orgId) => service.prisma.outputCacheEntry.findMany({ where: { orgId }, orderBy: { lastUsedAt: 'asc' } });

describe('output caching', () => {
  beforeEach(async () => {
    await service.prisma.outputCacheEntry.deleteMany({});
  });

  it('answers a deterministic utility from the cache on its second identical run, charging nothing', async () => {
    const red = await png('#f00');
    const first = await run(metadataWorkflow, { img: await upload(red) });
    const miss = first.completed.get('meta')!;
    expect(miss.usage.cached).toBeUndefined();
    expect(miss.usage.costUsd).toBeGreaterThan(0);
    expect(await stepCost(first.runId, 'meta')).toBeGreaterThan(0);

    // The same bytes uploaded again: another ref, the same key.
    const second = await run(metadataWorkflow, { img: await upload(red) });
    const hit = second.completed.get('meta')!;
    expect(hit.usage).toMatchObject({ costUsd: 0, cached: true });
    expect(await stepCost(second.runId, 'meta')).toBe(0);
    expect(second.outputs).toEqual(first.outputs);
    const run2 = await service.prisma.run.findUniqueOrThrow({ where: { id: second.runId } });
    expect(Number(run2.spentMicros)).toBe(0);
  });

  it('answers a step whose output is a file with the first run\'s file, whose link works', async () => {
    const resize = {
      version: 2,
      nodes: [
        { id: 'img', uses: 'input', outputType: 'IMAGE' },
        { id: 'small', uses: 'image-resize', inputs: { image: '${img.value}', width: 2 } },
        { id: 'out', uses: 'output', inputs: { value: '${small.image}' } },
      ],
    };
    const photo = await png('#abc');
    const first = await run(resize, { img: await upload(photo) });
    expect(first.completed.get('small')!.usage.cached).toBeUndefined();
    const second = await run(resize, { img: await upload(photo) });
    expect(second.completed.get('small')!.usage).toMatchObject({ costUsd: 0, cached: true });
    const [a, b] = [first.outputs.out as Artifact, second.outputs.out as Artifact];
    expect(b.ref).toBe(a.ref);
    const file = await fetch(b.ref as string);
    expect(file.status).toBe(200);
    expect((await sharp(Buffer.from(await file.arrayBuffer())).metadata()).width).toBe(2);
    // The entry lives no longer than the file's retention less one TTL (docs/runs.md).
    const [entry] = await entries();
    const linkExpires = Number(new URL(a.ref as string).searchParams.get('expires')) * 1000;
    expect(entry!.expiresAt.getTime()).toBeLessThanOrEqual(linkExpires - service.config.outputCacheTtlSeconds * 1000);
  });

  it('misses after an input changes, and in another organization', async () => {
    await run(metadataWorkflow, { img: await upload(await png('#f00')) });
    const changed = await run(metadataWorkflow, { img: await upload(await png('#00f')) });
    expect(changed.completed.get('meta')!.usage.cached).toBeUndefined();
    expect(changed.completed.get('meta')!.usage.costUsd).toBeGreaterThan(0);

    const elsewhere = await run(metadataWorkflow, { img: await upload(await png('#f00'), other.token) }, { token: other.token });
    expect(elsewhere.completed.get('meta')!.usage.cached).toBeUndefined();
    expect(elsewhere.completed.get('meta')!.usage.costUsd).toBeGreaterThan(0);
    expect(await entries(other.orgId)).toHaveLength(1);
  });

  it('neither reads nor writes the cache with Output-Cache: off', async () => {
    const red = await png('#0f0');
    const off = { headers: { 'Output-Cache': 'off' } };
    await run(metadataWorkflow, { img: await upload(red) }, off);
    expect(await entries()).toHaveLength(0);
    await run(metadataWorkflow, { img: await upload(red) });
    expect(await entries()).toHaveLength(1);
    const again = await run(metadataWorkflow, { img: await upload(red) }, off);
    expect(again.completed.get('meta')!.usage.cached).toBeUndefined();
    expect(again.completed.get('meta')!.usage.costUsd).toBeGreaterThan(0);
  });

  it('caches an LLM call at temperature 0 only when the caller asks', async () => {
    const llm = { headers: { 'Output-Cache': 'llm' } };
    const calls = () => fake.requests.length;

    const before = calls();
    const first = await run(chatWorkflow(0), {}, llm);
    expect(calls()).toBe(before + 1);
    expect(first.completed.get('chat')!.usage.costUsd).toBeGreaterThan(0);

    const second = await run(chatWorkflow(0), {}, llm);
    expect(calls()).toBe(before + 1);
    expect(second.completed.get('chat')!.usage).toMatchObject({ costUsd: 0, cached: true });
    expect(await stepCost(second.runId, 'chat')).toBe(0);
    const charged = await service.prisma.ledgerEntry.findMany({ where: { runId: second.runId } });
    expect(charged.reduce((sum, e) => sum + Number(e.amountMicros), 0)).toBe(0);
    expect(second.outputs).toEqual(first.outputs);

    // Not asked (the default, auto): the provider is called again.
    const unasked = await run(chatWorkflow(0));
    expect(calls()).toBe(before + 2);
    expect(unasked.completed.get('chat')!.usage.cached).toBeUndefined();
    // Asked, but at temperature 0.7: called again, and nothing is kept for it.
    await run(chatWorkflow(0.7), {}, llm);
    await run(chatWorkflow(0.7), {}, llm);
    expect(calls()).toBe(before + 4);
  });

  it('runs the step as a miss when the cache cannot be read or written, and fails nothing', async () => {
    const red = await png('#0ff');
    const errors = async () => (await service.metrics.registry.getSingleMetric('svc_output_cache_total')!.get()).values.filter((v) => v.labels.result === 'error').reduce((n, v) => n + v.value, 0);
    const before = await errors();
    // The cache's table gone from under the service (a failed migration, a lost grant): every lookup and store fails.
    await service.database.pool.query('ALTER TABLE output_cache_entries RENAME TO output_cache_entries_away');
    try {
      const broken = await run(metadataWorkflow, { img: await upload(red) });
      expect(broken.completed.get('meta')!.usage.cached).toBeUndefined();
      expect(broken.completed.get('meta')!.usage.costUsd).toBeGreaterThan(0);
      expect(await errors()).toBeGreaterThanOrEqual(before + 2);
    } finally {
      await service.database.pool.query('ALTER TABLE output_cache_entries_away RENAME TO output_cache_entries');
    }
    // Back: the same input is a miss (nothing was stored meanwhile), then a hit.
    expect((await run(metadataWorkflow, { img: await upload(red) })).completed.get('meta')!.usage.cached).toBeUndefined();
    expect((await run(metadataWorkflow, { img: await upload(red) })).completed.get('meta')!.usage.cached).toBe(true);
  });

  it('evicts the least recently used entry beyond the per-organization bound', async () => {
    const [a, b, c] = await Promise.all([png('#100'), png('#200'), png('#300')]);
    await run(metadataWorkflow, { img: await upload(a) });
    await run(metadataWorkflow, { img: await upload(b) });
    // A used again: B is now the least recently used.
    expect((await run(metadataWorkflow, { img: await upload(a) })).completed.get('meta')!.usage.cached).toBe(true);
    await run(metadataWorkflow, { img: await upload(c) });
    expect(await entries()).toHaveLength(2);
    expect((await run(metadataWorkflow, { img: await upload(a) })).completed.get('meta')!.usage.cached).toBe(true);
    expect((await run(metadataWorkflow, { img: await upload(b) })).completed.get('meta')!.usage.cached).toBeUndefined();
    const evictions = (await service.metrics.registry.getSingleMetric('svc_output_cache_total')!.get()).values.find((v) => v.labels.result === 'eviction');
    expect(evictions?.value).toBeGreaterThanOrEqual(2);
  });
});
