import type { RunEvent, Workflow } from '../../services/contract';
import { defineNode, type NodeDefinition } from '../../services/nodes';
import { connector, ports } from '../../services/nodes/spec-builders';
import { AppError } from '../../services/platform/app-error';
import { createRedisConnection, GROUP_CLAIM_GRACE_MS, StepQueue } from '../../services/queue';
import { LedgerRepository, RunRepository, StepRepository } from '../../services/store';
import { seedAccount } from '../support/fixtures';
import { runInProcess } from '../support/in-process-run';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { stack } from '../support/stack';
import { exited, startWorkerProcess } from '../support/worker-process';

/**
 * Groups (services/runs/steps/README.md, "Groups"): the branches of a fan-out of local steps run
 * in jobs of up to 128, each one reservation and one commit, with every branch's events, charge
 * and ledger entry as if it had run alone; failures, retries and a worker that dies mid-group.
 */

const calls: number[] = [];
/** Branches (by `b`) that fail for good, and that fail once transiently. */
const failing = new Set<number>();
const flakyOnce = new Set<number>();
/** A local node: n + 1, reporting `b` as progress; estimate 3, price 2 (a transient failure costs 1). */
const groupInc = defineNode({
  spec: { id: 'test-group-inc', kind: 'model', title: 'inc', category: 'test', description: '', inputs: ports({ n: connector('INT'), b: connector('INT') }), outputs: ports({ n: connector('INT') }) },
  inline: true,
  estimate: () => 3,
  price: () => 2,
  async execute(inputs, ctx) {
    const b = inputs.b as number;
    calls.push(b);
    ctx.progress(`branch ${b}`);
    if (failing.has(b)) throw new AppError({ code: 'bad_request', message: `branch ${b} cannot run` });
    if (flakyOnce.delete(b)) throw Object.assign(new AppError({ code: 'unavailable', message: 'hiccup' }), { costMicros: 1 });
    return { n: (inputs.n as number) + 1 };
  },
});
const TEST_NODES: NodeDefinition[] = [groupInc];

/** src → b0 … b{width-1} (each reads src), every branch an output. */
function fanOut(width: number, uses = 'test-group-inc'): Workflow {
  const branchInputs = (i: number) => (uses === 'math-add' ? { a: '${src.result}', b: i } : { n: '${src.n}', b: i });
  return {
    version: 2,
    nodes: [
      { id: 'src', uses, inputs: uses === 'math-add' ? { a: 1, b: 1 } : { n: 0, b: -1 } },
      ...Array.from({ length: width }, (_, i) => ({ id: `b${i}`, uses, inputs: branchInputs(i) })),
      ...Array.from({ length: width }, (_, i) => ({ id: `o${i}`, uses: 'output', inputs: { value: `\${b${i}.${uses === 'math-add' ? 'result' : 'n'}}` } })),
    ],
  };
}

/** Per node, what the stream said of it, in order. */
function perNode(events: RunEvent[]): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const e of events) if ('nodeId' in e && e.nodeId) seen.set(e.nodeId, [...(seen.get(e.nodeId) ?? []), e.type]);
  return seen;
}

/** Records what the step queue is asked to enqueue (jobs and their groups), enqueueing it as usual; restore the spy after. */
function recordEnqueues() {
  const jobs: { nodeIds: readonly string[]; groups?: ReadonlyMap<string, readonly string[]> }[] = [];
  const enqueue = StepQueue.prototype.enqueue;
  const enqueueSpy = jest.spyOn(StepQueue.prototype, 'enqueue').mockImplementation(function (this: StepQueue, runId, nodeIds, tokens, groups) {
    jobs.push({ nodeIds, groups });
    return enqueue.call(this, runId, nodeIds, tokens, groups);
  });
  return { jobs, enqueueSpy };
}

describe('groups: a fan-out of local steps', () => {
  let service: TestService;
  let runs: RunRepository;

  beforeAll(async () => {
    service = await startTestService({ env: { STEP_RETRY_ATTEMPTS: '3', STEP_RETRY_BASE_MS: '5' }, nodes: TEST_NODES });
    runs = new RunRepository(service.database);
  });
  afterAll(async () => {
    await service?.close();
  });
  beforeEach(() => {
    calls.length = 0;
    failing.clear();
    flakyOnce.clear();
  });

  /** Runs `workflow` through the in-process call path (`runs.create`), its whole stream collected. */
  const run = (workflow: Workflow, capMicros?: number) => runInProcess(service, workflow, { requestId: 'step-groups-test', ...(capMicros === undefined ? {} : { capMicros }) });

  it('runs 150 branches in a handful of jobs and commits: each once, its events once and in order, charged its own price', async () => {
    const { jobs, enqueueSpy } = recordEnqueues();
    const commitSpy = jest.spyOn(StepRepository.prototype, 'completeStep');
    // A batch of local steps takes more only within 10 ms of its first (StepBatch): the clock held
    // still, so that how many commits a group takes does not depend on how loaded the machine is
    // (under a full make test, each branch outlasted the window and committed alone).
    const clock = performance.now();
    const clockSpy = jest.spyOn(performance, 'now').mockReturnValue(clock);
    const ledger = new LedgerRepository(service.prisma);
    const before = await ledger.balance(service.account.orgId);
    try {
      const { runId, events } = await run(fanOut(150));
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`o${i}`, { kind: 'int', value: 2 }])) });
      expect(calls.filter((b) => b >= 0).sort((x, y) => x - y)).toEqual(Array.from({ length: 150 }, (_, i) => i));
      const seen = perNode(events);
      for (let i = 0; i < 150; i++) expect(seen.get(`b${i}`)).toEqual(['step.started', 'step.progress', 'step.completed']);
      // Every branch's completion comes after its source's.
      const srcDone = events.findIndex((e) => e.type === 'step.completed' && e.nodeId === 'src');
      expect(events.findIndex((e) => e.type === 'step.started' && e.nodeId !== 'src')).toBeGreaterThan(srcDone);

      // The source's job runs the first 128 branches itself (its group); the other 22 go in one job: one job of branches, not 149.
      const enqueued = jobs.flatMap((j) => j.nodeIds.map((id) => [id, ...(j.groups?.get(id) ?? [])]));
      expect(enqueued.filter((job) => job.some((id) => id.startsWith('b')))).toEqual([GROUPS[1]]);
      expect(new Set(enqueued.flat()).size).toBe(enqueued.flat().length);
      expect(commitSpy.mock.calls.filter(([input]) => input.runId === runId).length).toBeLessThan(30);

      const record = (await runs.getRun(runId))!;
      expect(record).toMatchObject({ status: 'completed', spentMicros: 151 * 2, reservedMicros: 0 });
      expect(record.steps.every((s) => s.status === 'completed' && s.costMicros === 2)).toBe(true);
      expect(await service.prisma.ledgerEntry.count({ where: { runId } })).toBe(151);
      expect(await ledger.balance(service.account.orgId)).toBe(before - 151 * 2);
    } finally {
      enqueueSpy.mockRestore();
      commitSpy.mockRestore();
      clockSpy.mockRestore();
    }
  });

  it("groups the first steps of a run that starts wide (a fan-out from the run's inputs): 130 steps in two jobs", async () => {
    const { jobs, enqueueSpy } = recordEnqueues();
    const workflow: Workflow = {
      version: 2,
      nodes: [
        ...Array.from({ length: 130 }, (_, i) => ({ id: `w${i}`, uses: 'test-group-inc', inputs: { n: i, b: i } })),
        ...Array.from({ length: 130 }, (_, i) => ({ id: `o${i}`, uses: 'output', inputs: { value: `\${w${i}.n}` } })),
      ],
    };
    try {
      const { runId, events } = await run(workflow);
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`o${i}`, { kind: 'int', value: i + 1 }])) });
      expect(calls.sort((x, y) => x - y)).toEqual(Array.from({ length: 130 }, (_, i) => i));
      const seen = perNode(events);
      for (let i = 0; i < 130; i++) expect(seen.get(`w${i}`)).toEqual(['step.started', 'step.progress', 'step.completed']);
      // The run's start: 128 + 2, each group one job headed by its first step.
      const first = jobs[0]!;
      expect(first.nodeIds).toHaveLength(2);
      expect(first.nodeIds.map((id) => 1 + (first.groups?.get(id)?.length ?? 0))).toEqual([128, 2]);
      const record = (await runs.getRun(runId))!;
      expect(record).toMatchObject({ status: 'completed', spentMicros: 130 * 2, reservedMicros: 0 });
      expect(await service.prisma.ledgerEntry.count({ where: { runId } })).toBe(130);
    } finally {
      enqueueSpy.mockRestore();
    }
  });

  /**
   * The groups of fanOut(150)'s branches, in the order Postgres lists ready steps (by id), 128 a
   * group: the first (b0 … b79) run by the source's job, the second (b8, b80 … b99, b9) enqueued.
   */
  const GROUPS = ((ids) => [ids.slice(0, 128), ids.slice(128)])(Array.from({ length: 150 }, (_, i) => `b${i}`).sort());

  it('fails the run at a branch that fails inside a group: what ran before it is committed and charged once, the rest of its group never runs', async () => {
    failing.add(70);
    const group = GROUPS.find((g) => g.includes('b70'))!;
    const [before, after] = [group.slice(0, group.indexOf('b70')), group.slice(group.indexOf('b70') + 1)];
    const { runId, events } = await run(fanOut(150));
    expect(events.at(-1)).toEqual({ type: 'run.failed', error: { code: 'bad_request', message: 'branch 70 cannot run' } });
    expect(perNode(events).get('b70')).toEqual(['step.started', 'step.progress', 'step.failed']);
    const record = (await runs.getRun(runId))!;
    const status = new Map(record.steps.map((s) => [s.nodeId, s.status]));
    const completed = record.steps.filter((s) => s.status === 'completed');
    expect(record).toMatchObject({ status: 'failed', reservedMicros: 0, spentMicros: completed.length * 2 });
    expect(record.steps.find((s) => s.nodeId === 'b70')).toMatchObject({ status: 'failed', costMicros: 0 });
    expect(await service.prisma.ledgerEntry.count({ where: { runId } })).toBe(completed.length);
    // Its group: the branches before it committed and announced, those after it skipped, never called.
    expect(before.length).toBeGreaterThan(10);
    expect(after.length).toBeGreaterThan(5);
    for (const id of before) expect([id, status.get(id), perNode(events).get(id)?.at(-1)]).toEqual([id, 'completed', 'step.completed']);
    for (const id of after) expect([id, status.get(id)]).toEqual([id, 'skipped']);
    expect(calls.filter((b) => after.includes(`b${b}`))).toEqual([]);
    // No branch announced completed that is not, none twice (another group may finish around the failure, after the run's end).
    const announced = events.filter((e) => e.type === 'step.completed').map((e) => (e as { nodeId: string }).nodeId);
    expect(announced.every((id) => status.get(id) === 'completed')).toBe(true);
    expect(new Set(announced).size).toBe(announced.length);
  });

  it("retries a transient failure of a group's head and of a member on reservations of their own; the run completes", async () => {
    // b0 heads the first group (its source's job runs it); b100 is a member of it, and of the group
    // its members go on in once b0's retry gives them up (headed by b1).
    expect(GROUPS[0]!.slice(0, 4)).toEqual(['b0', 'b1', 'b10', 'b100']);
    flakyOnce.add(0);
    flakyOnce.add(100);
    const { runId, events } = await run(fanOut(150));
    expect(events.at(-1)).toMatchObject({ type: 'run.completed' });
    expect(calls.filter((b) => b === 0)).toHaveLength(2);
    expect(calls.filter((b) => b === 100)).toHaveLength(2);
    const seen = perNode(events);
    for (const b of ['b0', 'b100']) expect(seen.get(b)).toEqual(['step.started', 'step.progress', 'step.progress', 'step.progress', 'step.completed']);
    for (let i = 0; i < 150; i++) expect(seen.get(`b${i}`)?.filter((t) => t === 'step.completed')).toHaveLength(1);
    const record = (await runs.getRun(runId))!;
    // 151 steps at 2, and the two failed attempts at 1 each.
    expect(record).toMatchObject({ status: 'completed', spentMicros: 151 * 2 + 2, reservedMicros: 0 });
    expect(record.steps.find((s) => s.nodeId === 'b100')).toMatchObject({ attempt: 2, costMicros: 3 });
  });

  it('recovers a group whose worker died in the middle of it: every branch completed and charged once', async () => {
    const api = await startTestService({ env: { ROLE: 'api' } });
    const who = await seedAccount(api.prisma, { slug: 'groupcrash', scopes: ['run'], balanceMicros: 1_000_000 });
    // b70 is the 119th of the first group (b0 … b79 by id), which the source's job runs itself: its worker exits while settling
    // it, the branches before it committed or held in the batch. The source's job comes back, finds its step done and gives
    // up the group it ran (each branch not done gets a job of its own); the second group's job comes back and takes it over.
    let worker = startWorkerProcess(api, { SVC_FAILPOINTS: 'step.beforeSettle:b70=exit(137)', STEP_LOCK_MS: '1000' });
    try {
      const res = await fetch(`${api.url}/v1/runs`, { method: 'POST', headers: { ...bearer(who.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow: fanOut(150, 'math-add') }) });
      expect(res.status).toBe(200);
      const streamed = readSse(res);
      await exited(worker);
      worker = startWorkerProcess(api, { STEP_LOCK_MS: '1000' });
      const messages = await streamed;
      expect(messages.at(-1)?.data).toBe('[DONE]');
      const events = messages.slice(0, -1).map((m) => JSON.parse(m.data) as RunEvent);
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`o${i}`, { kind: 'float', value: 2 + i }])) });
      // No branch announced twice. Events of a commit whose append the dying worker had not sent are
      // not replayed (docs/runs.md, "Crashes and lost work"): a branch may be missing, never repeated.
      const seen = perNode(events);
      for (let i = 0; i < 150; i++) expect([[], ['step.started', 'step.completed']]).toContainEqual(seen.get(`b${i}`) ?? []);
      expect([...seen.values()].filter((types) => types.length === 2).length).toBeGreaterThan(100);
      const run = await api.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId } });
      const steps = await api.prisma.step.findMany({ where: { runId: run.id } });
      const spent = steps.reduce((sum, s) => sum + Number(s.costMicros), 0);
      expect(steps.every((s) => s.status === 'completed')).toBe(true);
      expect(Number(run.spentMicros)).toBe(spent);
      expect(Number(run.reservedMicros)).toBe(0);
      expect(await api.prisma.ledgerEntry.count({ where: { runId: run.id } })).toBe(steps.filter((s) => Number(s.costMicros) > 0).length);
    } finally {
      worker.kill('SIGKILL');
      await exited(worker);
      await api.close();
    }
  }, 60_000);
});

describe("groups: the reaper leaves a group's siblings to its job", () => {
  const redis = createRedisConnection(stack().redisUrl);
  const prefix = `groups${process.pid}`;
  const queue = new StepQueue({ connection: redis, prefix });
  afterAll(async () => {
    await queue.close();
    redis.disconnect();
  });

  it('requeues a sibling only once its group job is gone and the grace has passed', async () => {
    const runId = '00000000-0000-4000-8000-000000000001';
    await queue.enqueue(runId, ['h'], undefined, new Map([['h', ['m1', 'm2']]]));
    // The group job is waiting: its siblings are its, a step of no group is not.
    await expect(queue.requeue(runId, ['m1', 'm2', 'x'])).resolves.toEqual(['x']);
    // The group job gone (finished or lost), within the grace: still left to it (it may be handing them on).
    await (await queue.queue.getJobs(['waiting'])).find((j) => j.data.nodeId === 'h')!.remove();
    await expect(queue.requeue(runId, ['m1'])).resolves.toEqual([]);
    // Past the grace: the sibling was lost with its group, and gets a job of its own.
    await redis.hset(`${prefix}:step-groups:${runId}`, 'm1', `${Date.now() - GROUP_CLAIM_GRACE_MS - 1} h`);
    await expect(queue.requeue(runId, ['m1', 'm2'])).resolves.toEqual(['m1']);
    const waiting = await queue.queue.getJobs(['waiting']);
    expect(waiting.map((j) => j.data.nodeId).sort()).toEqual(['m1', 'x']);
  });
});
