import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { BlobUrlSigner, FsBlobStore } from '../../services/blobs';
import type { RunEvent, Workflow } from '../../services/contract';
import { prepareWorkflow } from '../../services/engine';
import { BlobArtifactStore, createCatalog, defineNode, findNode, isLocalNode, PLATFORM_NODES, type NodeDefinition } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { flatPricing } from '../../services/nodes/pricing';
import { AppError } from '../../services/platform/app-error';
import { createLogger } from '../../services/platform/logger';
import { createRedisConnection, publishRunAbort, subscribeRunAborts } from '../../services/queue';
import { InFlightSteps, RunContexts, RunLifecycle, RunStarter, StepExecutor } from '../../services/runs';
import { LedgerRepository, RunRepository, StepRepository } from '../../services/store';
import { startStepWorker } from '../../workers/step-worker';
import { startTestService, type TestService } from '../support/service';
import { stack, uniqueName } from '../support/stack';

/**
 * The step executor with nodes that behave like providers do (flaky, slow, failing), which the
 * platform's local nodes never are. Provider nodes arrive with their own issue and plug into the
 * same executor; these test nodes exercise its retry and abort paths now.
 */
const log = createLogger({ level: 'silent' });

/** Fails with a transient error (costing 7 micro-USD each) until its `failures` are used up. */
let flakyCalls = 0;
const flaky = defineNode({
  spec: { id: 'test-flaky', kind: 'model', title: 'Flaky', category: 'test', description: '', inputs: ports({ failures: connector('INT') }), outputs: ports({ text: connector('TEXT') }) },
  estimate: () => 20,
  price: () => 10,
  async execute(inputs) {
    flakyCalls++;
    if (flakyCalls <= (inputs.failures as number)) throw Object.assign(new AppError({ code: 'unavailable', message: 'provider answered 503' }), { costMicros: 7 });
    return { text: `ok after ${flakyCalls}` };
  },
});

/** Waits until aborted (a long provider call that honours the signal). */
const abortedAt: number[] = [];
const slow = defineNode({
  spec: { id: 'test-slow', kind: 'model', title: 'Slow', category: 'test', description: '', inputs: ports({}), outputs: ports({ text: connector('TEXT') }) },
  ...flatPricing(5),
  execute: (_inputs, ctx) =>
    new Promise((_resolve, reject) => {
      ctx.progress('waiting for the provider');
      const timer = setTimeout(() => reject(new Error('slow node was never aborted')), 20_000);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        abortedAt.push(Date.now());
        reject(ctx.signal.reason);
      });
    }),
});

/** Fails for good after a moment. */
const broken = defineNode({
  spec: { id: 'test-broken', kind: 'model', title: 'Broken', category: 'test', description: '', inputs: ports({}), outputs: ports({ text: connector('TEXT') }) },
  ...flatPricing(3),
  async execute() {
    await sleep(150);
    throw new AppError({ code: 'bad_request', message: 'the provider refused the prompt' });
  },
});

const TEST_NODES: NodeDefinition[] = [flaky, slow, broken];
const catalog = createCatalog([...PLATFORM_NODES, ...TEST_NODES].map((n) => n.spec));
const nodeById = (id: string) => TEST_NODES.find((n) => n.spec.id === id) ?? findNode(id);

describe('step executor: transient retries and aborts', () => {
  let service: TestService;
  let starter: RunStarter;
  let worker: Worker;
  let connections: Redis[];
  let unsubscribe: () => Promise<void>;
  let runs: RunRepository;

  beforeAll(async () => {
    service = await startTestService({ env: { ROLE: 'api' } });
    const { prisma, runtime, config } = service;
    runs = new RunRepository(prisma);
    const steps = new StepRepository(prisma);
    const contexts = new RunContexts(runs, catalog);
    const publisher = createRedisConnection(stack().redisUrl);
    const subscriber = createRedisConnection(stack().redisUrl);
    const workerConnection = createRedisConnection(stack().redisUrl);
    connections = [publisher, subscriber, workerConnection];
    const lifecycle = new RunLifecycle({ runs, events: runtime.bus, publishAbort: (runId) => publishRunAbort(publisher, config.redisPrefix, runId), log });
    const inFlight = new InFlightSteps();
    unsubscribe = await subscribeRunAborts(subscriber, config.redisPrefix, (runId) => inFlight.abortRun(runId, new Error('the run stopped')));
    const blobs = new FsBlobStore(path.join(stack().tmpDir, uniqueName('executor-blobs')));
    const signer = new BlobUrlSigner({ publicBaseUrl: config.publicBaseUrl, secret: config.blobSigningSecret });
    const executor = new StepExecutor({
      runs,
      steps,
      contexts,
      lifecycle,
      events: runtime.bus,
      queue: runtime.queue,
      inFlight,
      findNode: nodeById,
      mayRunInline: isLocalNode,
      artifactsFor: (runId) => new BlobArtifactStore({ store: blobs, signer, publicBaseUrl: config.publicBaseUrl, keyPrefix: `runs/${runId}`, urlTtlSeconds: 3600 }),
      retry: { attempts: 3, baseDelayMs: 5 },
      log,
    });
    worker = startStepWorker({ connection: workerConnection, prefix: config.redisPrefix, concurrency: 8, lockMs: 30_000, log, handlers: { 'step.execute': ({ runId, nodeId }) => executor.execute(runId, nodeId) } });
    starter = new RunStarter({ runs, events: runtime.bus, queue: runtime.queue, lifecycle, log });
  });

  afterAll(async () => {
    await worker?.close();
    await unsubscribe?.();
    for (const connection of connections ?? []) await connection.quit();
    await service?.close();
  });

  async function run(workflow: Workflow, capMicros = 500_000): Promise<{ runId: string; events: RunEvent[] }> {
    const prepared = prepareWorkflow(workflow, catalog, {});
    if (!prepared.ok) throw new Error(prepared.message);
    const { account } = service;
    const runId = await starter.start({ orgId: account.orgId, userId: account.userId, tokenId: account.tokenId, definition: workflow, prepared: prepared.prepared, inputs: prepared.inputs, capMicros });
    const events: RunEvent[] = [];
    for await (const { event } of service.runtime.bus.events(runId)) events.push(event);
    return { runId, events };
  }

  it('retries a transient provider failure, charging every attempt, and completes', async () => {
    flakyCalls = 0;
    const ledger = new LedgerRepository(service.prisma);
    const before = await ledger.balance(service.account.orgId);
    const { runId, events } = await run({ version: 2, nodes: [{ id: 'f', uses: 'test-flaky', inputs: { failures: 2 } }, { id: 'o', uses: 'output', inputs: { value: '${f.text}' } }] });
    expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { o: { kind: 'text', value: 'ok after 3' } } });
    expect(events.filter((e) => e.type === 'step.progress').map((e) => (e as { message: string }).message)).toEqual([
      'attempt 1 failed (provider answered 503); retrying',
      'attempt 2 failed (provider answered 503); retrying',
    ]);
    // Two failed attempts at 7 and the successful one at 10.
    expect(events.find((e) => e.type === 'step.completed')).toMatchObject({ usage: { costUsd: 0.000024 } });
    const record = (await runs.getRun(runId))!;
    expect(record).toMatchObject({ spentMicros: 24, reservedMicros: 0 });
    expect(record.steps[0]).toMatchObject({ attempt: 3, costMicros: 24 });
    expect(await ledger.balance(service.account.orgId)).toBe(before - 24);
  });

  it('gives up after the last attempt and fails the run with the provider error', async () => {
    flakyCalls = 0;
    const { runId, events } = await run({ version: 2, nodes: [{ id: 'f', uses: 'test-flaky', inputs: { failures: 5 } }, { id: 'o', uses: 'output', inputs: { value: '${f.text}' } }] });
    expect(flakyCalls).toBe(3);
    expect(events.at(-1)).toEqual({ type: 'run.failed', error: { code: 'unavailable', message: 'provider answered 503' } });
    expect(await runs.getRun(runId)).toMatchObject({ status: 'failed', spentMicros: 21, reservedMicros: 0 });
  });

  it('stops retrying when another attempt would not fit in the cap', async () => {
    flakyCalls = 0;
    // Estimate 20 against a cap of 30: attempt 1 holds 20 and costs 7; attempt 2 fits (7 + 20) and costs 7; a third would need 14 + 20 > 30.
    const { runId, events } = await run({ version: 2, nodes: [{ id: 'f', uses: 'test-flaky', inputs: { failures: 5 } }, { id: 'o', uses: 'output', inputs: { value: '${f.text}' } }] }, 30);
    expect(flakyCalls).toBe(2);
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'spend_cap_exceeded' } });
    const record = (await runs.getRun(runId))!;
    expect(record.spentMicros).toBe(14);
    expect(record.spentMicros).toBeLessThanOrEqual(30);
  });

  it('aborts the run’s other in-flight steps through their AbortSignal when a step fails', async () => {
    abortedAt.length = 0;
    const { runId, events } = await run({
      version: 2,
      nodes: [
        { id: 'wait1', uses: 'test-slow' },
        { id: 'wait2', uses: 'test-slow' },
        { id: 'bad', uses: 'test-broken' },
        { id: 'after', uses: 'text-regex-replace', inputs: { text: '${wait1.text}', pattern: '${bad.text}' } },
        { id: 'o', uses: 'output', inputs: { value: '${after.text}' } },
      ],
    });
    expect(events.at(-2)).toEqual({ type: 'step.failed', nodeId: 'bad', error: { code: 'bad_request', message: 'the provider refused the prompt' } });
    expect(events.at(-1)).toEqual({ type: 'run.failed', error: { code: 'bad_request', message: 'the provider refused the prompt' } });
    // Both slow steps were aborted (they reject on their own only after 20 s, without recording an abort), and settle once they stop.
    const deadline = Date.now() + 5000;
    while (abortedAt.length < 2 && Date.now() < deadline) await sleep(20);
    expect(abortedAt).toHaveLength(2);
    let record = (await runs.getRun(runId))!;
    while (record.steps.some((s) => s.status === 'running') && Date.now() < deadline) {
      await sleep(20);
      record = (await runs.getRun(runId))!;
    }
    // getRun reads the run row, then its steps: read again so the run row postdates the last settlement seen.
    record = (await runs.getRun(runId))!;
    const statuses = Object.fromEntries(record.steps.map((s) => [s.nodeId, s.status]));
    expect(statuses).toEqual({ bad: 'failed', after: 'skipped', wait1: expect.stringMatching(/^(failed|cancelled)$/), wait2: expect.stringMatching(/^(failed|cancelled)$/) });
    expect(record).toMatchObject({ status: 'failed', reservedMicros: 0 });
  });
});
