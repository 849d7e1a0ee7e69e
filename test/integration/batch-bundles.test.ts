import { defineNode } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { AppError } from '../../services/platform/app-error';
import { createRedisConnection, GROUP_CLAIM_GRACE_MS, StepQueue } from '../../services/queue';
import { eventually } from '../support/eventually';
import { jsonCall } from '../support/json-api';
import { seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { stack } from '../support/stack';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * Bundles (docs/batches.md, Bundles): batch rows whose lone first step is a local node go several
 * to one step job. Every row still ends once, charged as alone; the reaper leaves a bundled step to
 * its bundle while the bundle lives; a bundle whose worker was killed is delivered again and each
 * of its steps taken over.
 */

/** A local node (it runs inline) costing `n` micro-USD; fails on purpose when `fail` is true. */
const localPriced = defineNode({
  spec: {
    id: 'test-bundle-priced',
    kind: 'model',
    title: 'Local priced',
    category: 'test',
    description: 'Costs n micro-USD; answers n + 1; fails when fail is true',
    inputs: ports({ n: connector('INT'), fail: connector('BOOLEAN', { defaultValue: false }) }),
    outputs: ports({ n: connector('INT') }),
  },
  inline: true,
  estimate: (inputs) => inputs.n as number,
  price: (inputs) => inputs.n as number,
  async execute(inputs) {
    if (inputs.fail === true) throw new AppError({ code: 'bad_request', message: `row with n=${inputs.n as number} fails on purpose` });
    return { n: (inputs.n as number) + 1 };
  },
});

const workflow = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'INT' },
    { id: 'fail', uses: 'input', outputType: 'BOOLEAN', inputs: { default: false } },
    { id: 'step', uses: 'test-bundle-priced', inputs: { n: '${n.value}', fail: '${fail.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${step.n}' } },
  ],
};

/** The claims on a run's first step in its group record (the queue's `step-groups` hash). */
async function claimOf(redis: ReturnType<typeof createRedisConnection>, prefix: string, runId: string, nodeId: string): Promise<string | null> {
  return redis.hget(`${prefix}:step-groups:${runId}`, nodeId);
}

describe('a batch of local first steps, in bundles', () => {
  let service: TestService;
  const redis = createRedisConnection(stack().redisUrl);
  beforeAll(async () => {
    service = await startTestService({ nodes: [localPriced], env: { BATCH_BUNDLE_ROWS: '8', BATCH_FEED_INTERVAL_MS: '50' } });
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    redis.disconnect();
  });

  it('runs every row once, charged as alone, several rows to a job; a row that fails fails alone', async () => {
    const call = (method: string, path: string, body?: unknown) => jsonCall(service.url, method, path, body, service.account.token);
    const orgBefore = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
    const rows = Array.from({ length: 60 }, (_, i) => ({ n: i + 1, ...(i + 1 === 7 || i + 1 === 23 ? { fail: true } : {}) }));
    const created = await call('POST', '/v1/batches', { workflow, rows, concurrency: 40, rowMaxCostUsd: 0.001 });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const done = await eventually(async () => {
      const { body } = await call('GET', `/v1/batches/${id}`);
      return body.status === 'completed' ? body : undefined;
    }, { timeoutMs: 30_000 });
    expect(done.rows).toMatchObject({ total: 60, completed: 58, failed: 2, running: 0, pending: 0 });
    const charged = rows.filter((r) => !r.fail).reduce((sum, r) => sum + r.n, 0);
    expect(done.spentUsd).toBeCloseTo(charged / 1e6, 9);

    const batchRows = await service.prisma.batchRow.findMany({ where: { batchId: id }, orderBy: { row: 'asc' } });
    const runs = await service.prisma.run.findMany({ where: { batchId: id }, include: { steps: true } });
    // One run per row, its step run once, charged what it would have been charged alone.
    expect(runs).toHaveLength(60);
    expect(new Set(batchRows.map((r) => r.runId)).size).toBe(60);
    for (const row of batchRows) {
      const run = runs.find((r) => r.id === row.runId)!;
      const step = run.steps.find((s) => s.nodeId === 'step')!;
      const fails = row.row === 7 || row.row === 23;
      expect({ row: row.row, run: run.status, step: step.status, attempt: step.attempt, cost: Number(step.costMicros), reserved: Number(run.reservedMicros) }).toEqual({
        row: row.row,
        run: fails ? 'failed' : 'completed',
        step: fails ? 'failed' : 'completed',
        attempt: 1,
        cost: fails ? 0 : row.row,
        reserved: 0,
      });
    }
    const orgAfter = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId } });
    expect(Number(orgBefore.balanceMicros) - Number(orgAfter.balanceMicros)).toBe(charged);
    expect(Number(orgAfter.heldMicros)).toBe(Number(orgBefore.heldMicros));

    // Several rows to a job: each first step was claimed by a bundle, most bundles holding more than one row.
    const claims = await Promise.all(runs.map((run) => claimOf(redis, service.env.REDIS_PREFIX!, run.id, 'step')));
    const bundles = new Set(claims.map((claim) => /^\d+ @(bundle_[\w-]+)$/.exec(claim ?? '')?.[1]));
    // The batch's first turn on the worker starts a few rows a job each (its lane is not known there yet).
    expect(claims.filter((claim) => !/ @bundle_/.test(claim ?? '')).length).toBeLessThanOrEqual(8);
    bundles.delete(undefined);
    expect(bundles.size).toBeGreaterThan(1);
    expect(bundles.size).toBeLessThan(30);

    // A bundled row's events are those of a run alone, its start held to go out with its end.
    const failed = runs.find((r) => r.status === 'failed')!;
    const completed = runs.find((r) => r.status === 'completed')!;
    const typesOf = async (runId: string) => (await readSse(await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: bearer(service.account.token) }))).filter((m) => m.data !== '[DONE]').map((m) => (JSON.parse(m.data) as { type: string }).type);
    expect(await typesOf(completed.id)).toEqual(['run.started', 'step.started', 'step.completed', 'run.completed']);
    expect(await typesOf(failed.id)).toEqual(['run.started', 'step.started', 'step.failed', 'run.failed']);
  }, 60_000);
});

describe('the reaper and a bundle', () => {
  const redis = createRedisConnection(stack().redisUrl);
  const prefix = `bundles${process.pid}`;
  const queue = new StepQueue({ connection: redis, prefix });
  afterAll(async () => {
    await queue.close();
    redis.disconnect();
  });
  const runIdOf = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

  it("bundles runs whose one first step was reserved with the run, and leaves their steps to the bundle while it lives or was just made", async () => {
    const tokened = Array.from({ length: 10 }, (_, i) => ({ runId: runIdOf(i + 1), nodeIds: ['a'], tokens: new Map([['a', `token-${i + 1}`]]) }));
    const untokened = { runId: runIdOf(11), nodeIds: ['a'] };
    const twoFirst = { runId: runIdOf(12), nodeIds: ['a', 'b'], tokens: new Map([['a', 'token-12']]) };
    await queue.enqueueRuns([...tokened, untokened, twoFirst], { bundleRows: 4 });
    const jobs = await queue.queue.getJobs(['waiting']);
    const bundles = jobs.filter((j) => j.name === 'step.bundle');
    // 10 bundleable runs, 4 to a job: 4 + 4 + 2; the rest each step a job of its own.
    expect(bundles.map((j) => (j.data.steps as unknown[]).length).sort()).toEqual([2, 4, 4]);
    expect(bundles.flatMap((j) => j.data.steps as { runId: string; nodeId: string; attemptToken: string }[]).sort((x, y) => x.runId.localeCompare(y.runId))).toEqual(
      tokened.map(({ runId }, i) => ({ runId, nodeId: 'a', attemptToken: `token-${i + 1}` })),
    );
    expect(jobs.filter((j) => j.name === 'step.execute').map((j) => `${j.data.runId as string}/${j.data.nodeId as string}`).sort()).toEqual([`${runIdOf(11)}/a`, `${runIdOf(12)}/a`, `${runIdOf(12)}/b`]);

    // The bundle waits: its steps are its (a step of no bundle is not).
    const first = tokened[0]!.runId;
    const bundle = bundles.find((j) => (j.data.steps as { runId: string }[]).some((s) => s.runId === first))!;
    await expect(queue.requeue(first, ['a', 'x'])).resolves.toEqual(['x']);
    // Gone within the grace: still its (it may be finishing).
    await bundle.remove();
    await expect(queue.requeue(first, ['a'])).resolves.toEqual([]);
    // Past the grace with no bundle alive: lost with it, the step gets a job of its own.
    await redis.hset(`${prefix}:step-groups:${first}`, 'a', `${Date.now() - GROUP_CLAIM_GRACE_MS - 1} @${bundle.id!}`);
    await expect(queue.requeue(first, ['a'])).resolves.toEqual(['a']);

    // Past the grace with the bundle alive (running long): its step stays its, and so does a group its step heads.
    const second = tokened[4]!.runId;
    const other = bundles.find((j) => (j.data.steps as { runId: string }[]).some((s) => s.runId === second))!;
    const old = Date.now() - GROUP_CLAIM_GRACE_MS - 1;
    await redis.hset(`${prefix}:step-groups:${second}`, 'a', `${old} @${other.id!}`, 'm', `${old} a`);
    await expect(queue.requeue(second, ['a', 'm'])).resolves.toEqual([]);
    await other.remove();
    await expect(queue.requeue(second, ['a', 'm'])).resolves.toEqual(['a', 'm']);
  });
});

describe('a bundle whose worker is killed', () => {
  it('is delivered again: each of its steps taken over, every row completed once, nothing left held', async () => {
    const api = await startTestService({ env: { ROLE: 'api' } });
    const who = await seedAccount(api.prisma, { slug: 'bundlecrash', scopes: ['run'], balanceMicros: 1_000_000 });
    const redis = createRedisConnection(stack().redisUrl);
    const queue = new StepQueue({ connection: redis, prefix: api.env.REDIS_PREFIX! });
    // Each step waits 400 ms before it settles: the kill lands with bundles in the middle of their steps.
    let worker = startWorkerProcess(api, { SVC_FAILPOINTS: 'step.beforeSettle:sum=sleep(400)', STEP_LOCK_MS: '1000', BATCH_BUNDLE_ROWS: '10', BATCH_FEED_INTERVAL_MS: '50' });
    try {
      const math = { version: 2, nodes: [{ id: 'a', uses: 'input', outputType: 'FLOAT' }, { id: 'sum', uses: 'math-add', inputs: { a: '${a.value}', b: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${sum.result}' } }] };
      const rows = Array.from({ length: 80 }, (_, i) => ({ a: i }));
      const created = await jsonCall(api.url, 'POST', '/v1/batches', { workflow: math, rows, concurrency: 40, rowMaxCostUsd: 0.001 }, who.token);
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const stepsOf = () => api.prisma.step.findMany({ where: { nodeId: 'sum', run: { batchId: id } } });
      // A bundle running on the first worker, its steps waiting to settle.
      await eventually(async () => (await queue.queue.getJobs(['active'])).some((job) => job.name === 'step.bundle'), { timeoutMs: 30_000 });
      worker.kill('SIGKILL');
      await exited(worker);
      // A row the kill caught stored but not yet enqueued has no job at all: the reaper gives it one.
      worker = startWorkerProcess(api, { STEP_LOCK_MS: '1000', BATCH_BUNDLE_ROWS: '10', BATCH_FEED_INTERVAL_MS: '50', REAPER_INTERVAL_SECONDS: '1', STEP_STUCK_SECONDS: '5' });
      const done = await eventually(async () => {
        const { body } = await jsonCall(api.url, 'GET', `/v1/batches/${id}`, undefined, who.token);
        return body.status === 'completed' ? body : undefined;
      }, { timeoutMs: 60_000 });
      expect(done.rows).toMatchObject({ total: 80, completed: 80, failed: 0 });
      const steps = await stepsOf();
      expect(steps).toHaveLength(80);
      expect(steps.every((s) => s.status === 'completed' && Number(s.reservedMicros) === 0)).toBe(true);
      // The killed bundles' steps were taken over by their redelivery (a second attempt), not run by new jobs beside them.
      expect(steps.some((s) => s.attempt === 2)).toBe(true);
      expect(steps.every((s) => s.attempt <= 2)).toBe(true);
      const outputs = await api.prisma.batchRow.findMany({ where: { batchId: id }, orderBy: { row: 'asc' }, select: { outputs: true } });
      expect(outputs.map((r) => (r.outputs as { out: { value: number } }).out.value)).toEqual(rows.map((r) => r.a + 1));
      const org = await api.prisma.organization.findUniqueOrThrow({ where: { id: who.orgId } });
      expect(Number(org.heldMicros)).toBe(0);
      // Each step charged once (a taken-over attempt of a local node is charged nothing): the balance fell by what the steps cost.
      expect(1_000_000 - Number(org.balanceMicros)).toBe(steps.reduce((sum, s) => sum + Number(s.costMicros), 0));
      expect(steps.every((s) => Number(s.costMicros) === Number(steps[0]!.costMicros))).toBe(true);
    } finally {
      worker.kill('SIGKILL');
      await exited(worker);
      await queue.close();
      redis.disconnect();
      await api.close();
    }
  }, 120_000);
});
