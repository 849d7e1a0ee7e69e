import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunEvent } from '../../services/contract';
import { eventually } from '../support/eventually';
import { freePorts } from '../support/local-servers';
import { openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited } from '../support/worker-process';

/**
 * A catalog file changed under a running service: after a reload (SIGHUP, or a restart) new runs
 * get the new entry, while a run created before keeps the definition it started with, on any
 * process, whatever the file says now.
 */

const ROOT = path.resolve(__dirname, '../..');
const KEY_ENV = 'HOUSE_LLM_KEY';

/** A catalog file of one OpenAI-compatible chat entry at the fake, priced a flat `micros`. */
function catalogText(baseUrl: string, version: string, micros: number): string {
  return [
    'nodes:',
    '  - id: house-llm',
    '    provider: openai-chat',
    `    baseUrl: ${baseUrl}`,
    `    apiKeyEnv: ${KEY_ENV}`,
    '    model: house-model',
    `    title: House model (${version})`,
    '    category: llm',
    `    description: The house model, ${version} of its entry.`,
    '    maxOutputTokens: 64',
    '    price:',
    `      estimate: "${micros}"`,
    `      actual: "${micros}"`,
    '',
  ].join('\n');
}

describe('reloading the catalog file', () => {
  let fake: LlmFake;
  let dir: string;
  let file: string;
  let release: () => void = () => {};
  let held: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    process.env[KEY_ENV] = 'sk-house-0123456789abcdef';
    fake = await startLlmFake(async (res, req) => {
      await held;
      return openAiStream(['hi'], { prompt: 3, completion: 1 })(res, req);
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-catalog-'));
    file = path.join(dir, 'house.yaml');
  });

  afterAll(async () => {
    delete process.env[KEY_ENV];
    await fake?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const hold = () => {
    held = new Promise<void>((resolve) => (release = resolve));
  };
  // Two calls in a row: the second starts after whatever happened while the first was held.
  const workflow = {
    version: 2,
    nodes: [
      { id: 'ask', uses: 'house-llm', inputs: { prompt: 'hello', maxTokens: 8 } },
      { id: 'again', uses: 'house-llm', inputs: { prompt: '${ask.text}', maxTokens: 8 } },
      { id: 'answer', uses: 'output', inputs: { value: '${again.text}' } },
    ],
  };

  /** Posts a run and follows it to its end in the background; resolves with its id and terminal event's type. */
  function startRun(service: TestService): Promise<{ runId: string; type: string }> {
    return fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) }).then(async (res) => {
      expect(res.status).toBe(200);
      const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
      const started = events[0] as Extract<RunEvent, { type: 'run.started' }>;
      return { runId: started.runId, type: events.at(-1)!.type };
    });
  }

  /** What each of the run's two calls cost. */
  const stepCosts = async (service: TestService, runId: string) => {
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    const steps = await service.prisma.step.findMany({ where: { runId }, orderBy: { nodeId: 'desc' } });
    return steps.map((step) => [step.nodeId, Number(step.costMicros)]);
  };

  it('serves the new entry after a reload; a run in flight finishes on the entry it started with', async () => {
    fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v1', 5000));
    const service = await startTestService({ env: { NODE_CATALOG_FILES: file } });
    try {
      hold();
      const first = startRun(service);
      await eventually(() => fake.requests.length === 1, { what: 'the first run to call the provider' });
      // The first call is held: the second step of this run starts only after the reload.

      fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v2', 7000));
      await service.runtime.resources.reloadNodes();
      const listed = (await (await fetch(`${service.url}/v1/nodes?q=house-llm`)).json()) as { id: string; title: string }[];
      expect(listed.map((n) => n.title)).toEqual(['House model (v2)']);

      release();
      const ended = await first;
      expect(ended.type).toBe('run.completed');
      expect(await stepCosts(service, ended.runId)).toEqual([['ask', 5000], ['again', 5000]]);
      const stored = await service.prisma.run.findUniqueOrThrow({ where: { id: ended.runId } });
      expect(stored.nodeEntries).toMatchObject({ 'house-llm': { title: 'House model (v1)' } });

      const second = await startRun(service);
      expect(second.type).toBe('run.completed');
      expect(await stepCosts(service, second.runId)).toEqual([['ask', 7000], ['again', 7000]]);

      // An entry removed from the file: the palette no longer has it, and a new run naming it is refused.
      fs.writeFileSync(file, 'nodes: []\n');
      await service.runtime.resources.reloadNodes();
      expect(await (await fetch(`${service.url}/v1/nodes?q=house-llm`)).json()).toEqual([]);
      const refused = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }) });
      expect(refused.status).toBe(400);

      // A bad file on reload: reported, and the nodes in use stay.
      fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v3', 9000).replace('estimate: "9000"', 'estimate: "num_imgs * 2"'));
      await service.runtime.resources.reloadNodes();
      expect(await (await fetch(`${service.url}/v1/nodes?q=house-llm`)).json()).toEqual([]);
    } finally {
      release();
      await service.close();
    }
  });

  it('runs a stored run on the entry it started with on another process that loaded a newer file', async () => {
    fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v1', 5000));
    // The API alone: its runs wait in the queue until a worker starts.
    const service = await startTestService({ env: { NODE_CATALOG_FILES: file, ROLE: 'api' } });
    try {
      held = Promise.resolve();
      const run = startRun(service);
      await eventually(async () => (await service.prisma.run.count()) === 1, { what: 'the run to be stored' });
      fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v2', 7000));
      // A worker started now reads v2; the run was created under v1.
      await service.extra({ ROLE: 'worker' });
      const ended = await run;
      expect(ended.type).toBe('run.completed');
      expect(await stepCosts(service, ended.runId)).toEqual([['ask', 5000], ['again', 5000]]);
    } finally {
      await service.close();
    }
  });

  it('reloads on SIGHUP in a real process', async () => {
    fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v1', 5000));
    const service = await startTestService();
    const [port] = await freePorts(1);
    let child: ChildProcess | undefined;
    try {
      child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'workers/serve.ts')], {
        cwd: ROOT,
        env: { ...process.env, ...service.env, ROLE: 'api', PORT: String(port), NODE_CATALOG_FILES: file },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const titles = async () => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/nodes?q=house-llm`).catch(() => undefined);
        return res?.ok ? ((await res.json()) as { title: string }[]).map((n) => n.title) : [];
      };
      await eventually(async () => (await titles()).includes('House model (v1)'), { timeoutMs: 60_000, what: 'the process to serve v1' });
      fs.writeFileSync(file, catalogText(`${fake.url}/v1`, 'v2', 7000));
      child.kill('SIGHUP');
      await eventually(async () => (await titles()).includes('House model (v2)'), { what: 'the process to serve v2 after SIGHUP' });
      expect(child.exitCode).toBeNull();
    } finally {
      child?.kill('SIGTERM');
      if (child) await exited(child);
      await service.close();
    }
  });
});
