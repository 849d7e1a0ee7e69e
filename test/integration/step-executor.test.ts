import { setTimeout as sleep } from 'node:timers/promises';
import type { RunEvent, Workflow } from '../../services/contract';
import { defineNode, type NodeDefinition } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { flatPricing } from '../../services/nodes/pricing';
import { AppError } from '../../services/platform/app-error';
import { createRedisConnection, runEventKeys, RunEventBus } from '../../services/queue';

const original = RunEventBus.prototype.appendAll;
import { LedgerRepository, RunRepository } from '../../services/store';
import { eventually } from '../support/eventually';
import { runInProcess } from '../support/in-process-run';
import { startTestService, type TestService } from '../support/service';
import { stack } from '../support/stack';

/**
 * The step executor with nodes that behave like providers do (flaky, slow, failing), which the
 * platform's local nodes never are. Provider nodes arrive with their own issue and plug into the
 * same executor; these test nodes exercise its retry and abort paths now.
 */

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

/** Local test nodes (run inline, so chains of them run in batches): each adds 1 to `n`, reporting it as progress. */
const localCalls: string[] = [];
let localFlakyFailures = 0;
const localSpec = (id: string) => ({
  id,
  kind: 'model' as const,
  title: id,
  category: 'test',
  description: '',
  inputs: ports({ n: connector('INT') }),
  outputs: ports({ n: connector('INT') }),
});
const localInc = defineNode({
  spec: localSpec('test-local-inc'),
  inline: true,
  estimate: () => 3,
  price: () => 2,
  async execute(inputs, ctx) {
    localCalls.push(`inc ${inputs.n as number}`);
    ctx.progress(`adding 1 to ${inputs.n as number}`);
    return { n: (inputs.n as number) + 1 };
  },
});
const localFail = defineNode({
  spec: localSpec('test-local-fail'),
  inline: true,
  ...flatPricing(3),
  async execute(inputs) {
    localCalls.push(`fail ${inputs.n as number}`);
    throw new AppError({ code: 'bad_request', message: `cannot take ${inputs.n as number}` });
  },
});
const localFlaky = defineNode({
  spec: localSpec('test-local-flaky'),
  inline: true,
  estimate: () => 3,
  price: () => 2,
  async execute(inputs) {
    localCalls.push(`flaky ${inputs.n as number}`);
    if (localFlakyFailures-- > 0) throw Object.assign(new AppError({ code: 'unavailable', message: 'hiccup' }), { costMicros: 1 });
    return { n: (inputs.n as number) + 1 };
  },
});

/** A chain n0 → n1 → … of local test nodes (`uses(i)`, default test-local-inc), its last step's `n` as output "o". */
function localChain(length: number, uses: (i: number) => string = () => 'test-local-inc'): Workflow {
  return {
    version: 2,
    nodes: [
      ...Array.from({ length }, (_, i) => ({ id: `n${i}`, uses: uses(i), inputs: { n: i === 0 ? 0 : `\${n${i - 1}.n}` } })),
      { id: 'o', uses: 'output', inputs: { value: `\${n${length - 1}.n}` } },
    ],
  };
}

const TEST_NODES: NodeDefinition[] = [flaky, slow, broken, localInc, localFail, localFlaky];

describe('step executor: transient retries and aborts', () => {
  let service: TestService;
  let runs: RunRepository;

  beforeAll(async () => {
    // The service as production builds it, with the test nodes added to its catalog.
    service = await startTestService({ env: { STEP_RETRY_ATTEMPTS: '3', STEP_RETRY_BASE_MS: '5' }, nodes: TEST_NODES });
    runs = new RunRepository(service.database);
  });

  afterAll(async () => {
    await service?.close();
  });

  /** Runs `workflow` through the in-process call path (`runs.create`), its whole stream collected. */
  const run = (workflow: Workflow, capMicros?: number) => runInProcess(service, workflow, { requestId: 'step-executor-test', ...(capMicros === undefined ? {} : { capMicros }) });

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
    await eventually(() => abortedAt.length >= 2, { what: 'both slow steps to be aborted' });
    expect(abortedAt).toHaveLength(2);
    await eventually(async () => !(await runs.getRun(runId))!.steps.some((s) => s.status === 'running'), { what: 'the aborted steps to settle' });
    // getRun reads the run row, then its steps: read again so the run row postdates the last settlement seen.
    const record = (await runs.getRun(runId))!;
    const statuses = Object.fromEntries(record.steps.map((s) => [s.nodeId, s.status]));
    expect(statuses).toEqual({ bad: 'failed', after: 'skipped', wait1: expect.stringMatching(/^(failed|cancelled)$/), wait2: expect.stringMatching(/^(failed|cancelled)$/) });
    expect(record).toMatchObject({ status: 'failed', reservedMicros: 0 });
  });

  describe('chains of local steps, committed in batches', () => {
    beforeEach(() => {
      localCalls.length = 0;
      localFlakyFailures = 0;
    });

    /** Per step, in stream order, what the stream says of it (started, progress, completed with its cost). */
    function timeline(events: RunEvent[]): string[] {
      return events.flatMap((e) => {
        if (e.type === 'step.started') return [`${e.nodeId} started`];
        if (e.type === 'step.progress') return [`${e.nodeId} ${e.message}`];
        if (e.type === 'step.completed') return [`${e.nodeId} completed ${e.usage.costUsd}`];
        if (e.type === 'step.failed') return [`${e.nodeId} failed ${e.error.code}`];
        return [];
      });
    }

    it('runs a 40-step chain with fewer commits than steps: every event once and in order, each step charged its own price', async () => {
      const ledger = new LedgerRepository(service.prisma);
      const before = await ledger.balance(service.account.orgId);
      const { runId, events } = await run(localChain(40));
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { o: { kind: 'int', value: 40 } } });
      expect(timeline(events)).toEqual(Array.from({ length: 40 }, (_, i) => [`n${i} started`, `n${i} adding 1 to ${i}`, `n${i} completed 0.000002`]).flat());
      expect(localCalls).toHaveLength(40);

      const record = (await runs.getRun(runId))!;
      expect(record).toMatchObject({ status: 'completed', spentMicros: 80, reservedMicros: 0 });
      expect(record.steps.every((s) => s.status === 'completed' && s.costMicros === 2)).toBe(true);
      expect(await ledger.balance(service.account.orgId)).toBe(before - 80);
      expect(await service.prisma.ledgerEntry.count({ where: { runId } })).toBe(40);
      // Steps run inside a lease are committed under its head's attempt token: fewer tokens than steps.
      const tokens = await service.prisma.step.findMany({ where: { runId }, select: { attemptToken: true } });
      expect(new Set(tokens.map((t) => t.attemptToken)).size).toBeLessThan(40);
    });

    it('records a step that fails inside a batch as its own failure: the steps before it are committed, the rest skipped', async () => {
      const { runId, events } = await run(localChain(6, (i) => (i === 3 ? 'test-local-fail' : 'test-local-inc')));
      expect(timeline(events)).toEqual([
        ...[0, 1, 2].flatMap((i) => [`n${i} started`, `n${i} adding 1 to ${i}`, `n${i} completed 0.000002`]),
        'n3 started',
        'n3 failed bad_request',
      ]);
      expect(events.at(-1)).toEqual({ type: 'run.failed', error: { code: 'bad_request', message: 'cannot take 3' } });
      expect(localCalls).toEqual(['inc 0', 'inc 1', 'inc 2', 'fail 3']);
      const record = (await runs.getRun(runId))!;
      // A failure that reports no cost charges nothing: three steps at 2.
      expect(record).toMatchObject({ status: 'failed', spentMicros: 6, reservedMicros: 0 });
      expect(Object.fromEntries(record.steps.map((s) => [s.nodeId, s.status]))).toEqual({ n0: 'completed', n1: 'completed', n2: 'completed', n3: 'failed', n4: 'skipped', n5: 'skipped' });
    });

    it('retries a transient failure inside a batch on a reservation of its own, and goes on', async () => {
      localFlakyFailures = 1;
      const { runId, events } = await run(localChain(5, (i) => (i === 2 ? 'test-local-flaky' : 'test-local-inc')));
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { o: { kind: 'int', value: 5 } } });
      expect(localCalls).toEqual(['inc 0', 'inc 1', 'flaky 2', 'flaky 2', 'inc 3', 'inc 4']);
      expect(timeline(events).filter((line) => line.startsWith('n2'))).toEqual(['n2 started', 'n2 attempt 1 failed (hiccup); retrying', 'n2 completed 0.000003']);
      const record = (await runs.getRun(runId))!;
      expect(record).toMatchObject({ status: 'completed', spentMicros: 4 * 2 + 3, reservedMicros: 0 });
      expect(record.steps.find((s) => s.nodeId === 'n2')).toMatchObject({ attempt: 2, costMicros: 3 });
    });

    it('never runs a step whose estimate no longer fits in the cap: the batch ends and the run fails before it', async () => {
      // Each step holds 3 while it runs and costs 2: after 4 steps 8 is spent, and 8 + 3 > 10.
      const { runId, events } = await run(localChain(8), 10);
      expect(localCalls).toEqual(['inc 0', 'inc 1', 'inc 2', 'inc 3']);
      expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'spend_cap_exceeded', message: expect.stringContaining('node "n4"') } });
      expect(timeline(events).at(-2)).toBe('n3 completed 0.000002');
      const record = (await runs.getRun(runId))!;
      expect(record).toMatchObject({ status: 'failed', spentMicros: 8, reservedMicros: 0 });
      expect(record.steps.find((s) => s.nodeId === 'n4')).toMatchObject({ status: 'failed', costMicros: 0 });
    });
  });

  describe("a quick local step's start, held for its outcome", () => {
    const redis = createRedisConnection(stack().redisUrl);
    afterAll(() => redis.disconnect());

    /** The run's log as Redis holds it: each entry's event type (and node) and the time of the append that wrote it. */
    async function logOf(runId: string): Promise<{ what: string; at: number }[]> {
      const entries = await redis.lrange(runEventKeys(service.config.redisPrefix, runId).log, 0, -1);
      return entries.map((raw) => {
        const { event, at } = JSON.parse(raw) as { event: RunEvent; at: number };
        return { what: 'nodeId' in event ? `${event.type} ${event.nodeId}` : event.type, at };
      });
    }

    /** Runs `workflow`, recording the event types of each append to its log, in order. */
    async function appendsOf(workflow: Workflow): Promise<{ runId: string; appends: string[][] }> {
      const seen: string[][] = [];
      const spy = jest.spyOn(RunEventBus.prototype, 'appendAll').mockImplementation(function (this: RunEventBus, runId: string, events: readonly RunEvent[]) {
        seen.push([runId, ...events.map((e) => e.type)]);
        return original.call(this, runId, events);
      });
      try {
        const { runId } = await run(workflow);
        return { runId, appends: seen.filter(([id]) => id === runId).map(([, ...types]) => types) };
      } finally {
        spy.mockRestore();
      }
    }

    it("goes out in the same append as its completion and the run's end", async () => {
      const { runId, appends } = await appendsOf({ version: 2, nodes: [{ id: 's', uses: 'math-add', inputs: { a: 1, b: 2 } }, { id: 'o', uses: 'output', inputs: { value: '${s.result}' } }] });
      expect(appends).toEqual([['run.started'], ['step.started', 'step.completed', 'run.completed']]);
      expect((await logOf(runId)).map((e) => e.what)).toEqual(['run.started', 'step.started s', 'step.completed s', 'run.completed']);
    });

    it('goes out with the first progress a step reports', async () => {
      const { runId } = await run(localChain(1));
      expect((await logOf(runId)).map((e) => e.what)).toEqual(['run.started', 'step.started n0', 'step.progress n0', 'step.completed n0', 'run.completed']);
    });

    it("goes out before the failure of a step that fails, and before a retry's progress", async () => {
      const failed = await run(localChain(1, () => 'test-local-fail'));
      expect((await logOf(failed.runId)).map((e) => e.what)).toEqual(['run.started', 'step.started n0', 'step.failed n0', 'run.failed']);
      localFlakyFailures = 1;
      const retried = await run({ version: 2, nodes: [{ id: 'n0', uses: 'test-local-flaky', inputs: { n: 0 } }, { id: 'o', uses: 'output', inputs: { value: '${n0.n}' } }] });
      expect((await logOf(retried.runId)).map((e) => e.what)).toEqual(['run.started', 'step.started n0', 'step.progress n0', 'step.completed n0', 'run.completed']);
    });

    it('is not held for a node that calls a provider', async () => {
      flakyCalls = 0;
      const { runId, appends } = await appendsOf({ version: 2, nodes: [{ id: 'f', uses: 'test-flaky', inputs: { failures: 0 } }, { id: 'o', uses: 'output', inputs: { value: '${f.text}' } }] });
      // Its start goes out on its own, before the call: a client sees the step running.
      expect(appends).toEqual([['run.started'], ['step.started'], ['step.completed', 'run.completed']]);
      expect((await logOf(runId)).map((e) => e.what)).toEqual(['run.started', 'step.started f', 'step.completed f', 'run.completed']);
    });
  });
});
