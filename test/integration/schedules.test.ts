import { ScheduleSchema } from '../../services/contract';
import { defineNode } from '../../services/nodes';
import { verifyWebhook } from '../../services/sdk/src/node';
import { connector, ports } from '../../services/nodes/spec-builders';
import { ScheduleRepository } from '../../services/store';
import { eventually } from '../support/eventually';
import { expectValid, jsonCall } from '../support/json-api';
import { webhookReceiver } from '../support/recording-server';
import { bearer, publishWorkflow, startTestService, type TestService } from '../support/service';

/**
 * Schedules (docs/schedules.md) through the whole service: every refusal at creation, ticks run by
 * the workers' ticker (driven here with the time of each tick), exactly one run per tick however
 * many tickers look and whatever stopped half way, missed ticks caught up or skipped and
 * recorded, the monthly budget, pauses by callers and by the service (with the webhook).
 */

/** What one run costs: `test-sched-priced` is charged this. */
const PRICE = 1_000;

const pricedNode = defineNode({
  spec: {
    id: 'test-sched-priced',
    kind: 'model',
    title: 'Priced',
    category: 'test',
    description: 'Costs 0.001 USD; answers `n` times two',
    inputs: ports({ n: connector('INT') }),
    outputs: ports({ doubled: connector('INT') }),
  },
  estimate: () => PRICE,
  price: () => PRICE,
  async execute(inputs) {
    return { doubled: (inputs.n as number) * 2 };
  },
});

const doubler = {
  version: 2,
  nodes: [
    { id: 'n', uses: 'input', outputType: 'INT' },
    { id: 'step', uses: 'test-sched-priced', inputs: { n: '${n.value}' } },
    { id: 'doubled', uses: 'output', inputs: { value: '${step.doubled}' } },
  ],
};

let service: TestService;
let store: ScheduleRepository;
let workflowRef: string;
/** A webhook receiver: `receiver.received` is what it was sent. */
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;

beforeAll(async () => {
  receiver = await webhookReceiver();
  service = await startTestService({ nodes: [pricedNode], env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}` } });
  store = new ScheduleRepository(service.database);
  await publishWorkflow(service, 'nightly', doubler);
  const org = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId }, select: { slug: true } });
  workflowRef = `${org.slug}/nightly@latest`;
}, 60_000);
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  headers
    ? fetch(`${service.url}${path}`, { method, headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) }).then(async (res) => ({ status: res.status, body: await res.json() }))
    : jsonCall(service.url, method, path, body, service.account.token);

const ticker = () => service.runtime.schedules!;

async function create(body: Record<string, unknown>): Promise<{ id: string; nextTicks: string[] }> {
  const created = await call('POST', '/v1/schedules', { workflowRef, inputs: { n: { value: 21 } }, cron: '* * * * *', ...body });
  expect(created.status).toBe(201);
  expectValid(ScheduleSchema, created.body);
  return created.body;
}

async function runsOf(scheduleId: string): Promise<{ id: string; status: string; scheduleId: string }[]> {
  const listed = await call('GET', `/v1/runs?schedule=${scheduleId}&limit=100`);
  expect(listed.status).toBe(200);
  return listed.body.runs;
}

const at = (iso: string, plusMs = 0) => new Date(new Date(iso).getTime() + plusMs);

describe('schedules.create refuses what cannot run, naming the field', () => {
  it.each([
    [{ cron: '* * * *' }, 400, /^cron "\* \* \* \*" has 4 fields; write five/],
    [{ cron: '61 * * * *' }, 400, /^cron "61 \* \* \* \*" is not a valid expression/],
    [{ cron: '*/10 * * * * *' }, 400, /has 6 fields/],
    [{ cron: 'H 9 * * *' }, 400, /uses H/],
    [{ cron: '@secondly' }, 400, /not a macro a schedule takes/],
    [{ timezone: 'Mars/Olympus' }, 400, /^timezone "Mars\/Olympus" is not an IANA time zone/],
    [{ inputs: { nope: { value: 1 } } }, 400, /nope/],
    [{ inputs: {} }, 400, /"n"/],
    [{ maxCostUsd: 0.01, monthlyBudgetUsd: 0.005 }, 400, /monthlyBudgetUsd \(0.005\) is below one run's cap/],
    [{ catchUpSeconds: 90_000 }, 400, /catchUpSeconds/],
    [{ color: 'red' }, 400, /color/],
    [{ workflowRef: 'nobody/nothing@1' }, 404, /does not resolve to a published workflow version/],
  ])('%j → %i', async (patch, status, message) => {
    const before = await service.prisma.schedule.count();
    const answer = await call('POST', '/v1/schedules', { workflowRef, inputs: { n: { value: 1 } }, cron: '0 9 * * *', ...patch });
    expect(answer.status).toBe(status);
    expect(answer.body.error).toMatch(message);
    expect(await service.prisma.schedule.count()).toBe(before);
  });

  it('refuses a Webhook-Url on a private address, as for runs', async () => {
    const answer = await call('POST', '/v1/schedules', { workflowRef, inputs: { n: { value: 1 } }, cron: '0 9 * * *' }, { 'Webhook-Url': 'http://10.0.0.1/hook' });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatch(/the Webhook-Url header names 10\.0\.0\.1/);
  });
});

describe('a schedule as created', () => {
  it('shows its next ticks in its time zone and nothing run yet', async () => {
    const schedule = await create({ name: 'morning', cron: '0 9 * * 1-5', timezone: 'Europe/Paris', maxCostUsd: 0.01, monthlyBudgetUsd: 5 });
    const body = (await call('GET', `/v1/schedules/${schedule.id}`)).body;
    expect(body).toMatchObject({ name: 'morning', status: 'active', cron: '0 9 * * 1-5', timezone: 'Europe/Paris', maxCostUsd: 0.01, monthlyBudgetUsd: 5, spentThisMonthUsd: 0, catchUpSeconds: 3600, recentTicks: [], pauseReason: null });
    expect(body.nextTicks).toHaveLength(5);
    for (const tick of body.nextTicks as string[]) {
      const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit', minute: '2-digit', weekday: 'short', hour12: false }).format(new Date(tick));
      expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
      expect(new Date(tick).getTime()).toBeGreaterThan(Date.now());
    }
  });

  it('answers the same schedule for a repeated Idempotency-Key, and 422 for another request with it', async () => {
    const body = { workflowRef, inputs: { n: { value: 2 } }, cron: '0 10 * * *' };
    const first = await call('POST', '/v1/schedules', body, { 'Idempotency-Key': 'sched-key-1' });
    const again = await call('POST', '/v1/schedules', body, { 'Idempotency-Key': 'sched-key-1' });
    expect(first.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    const other = await call('POST', '/v1/schedules', { ...body, cron: '0 11 * * *' }, { 'Idempotency-Key': 'sched-key-1' });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
  });
});

describe('ticks', () => {
  it('start one run per tick, carrying the schedule id, however many tickers look at once', async () => {
    const schedule = await create({});
    const tick = schedule.nextTicks[0]!;
    // Not due yet: nothing.
    await ticker().sweep(at(tick, -1_000));
    expect(await runsOf(schedule.id)).toHaveLength(0);
    // Due: this worker's ticker and a second worker's at the same moment.
    const second = await service.extra({ ROLE: 'worker' });
    await Promise.all([ticker().sweep(at(tick, 200)), second.schedules!.sweep(at(tick, 200)), ticker().sweep(at(tick, 300))]);
    const runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.scheduleId).toBe(schedule.id);
    const record = await eventually(async () => {
      const got = await call('GET', `/v1/runs/${runs[0]!.id}`);
      return got.body.status === 'completed' ? got.body : null;
    });
    expect(record).toMatchObject({ scheduleId: schedule.id, batchId: null, outputs: { doubled: { value: 42 } } });
    const body = (await call('GET', `/v1/schedules/${schedule.id}`)).body;
    expect(body.recentTicks).toEqual([expect.objectContaining({ tickAt: tick, status: 'started', runId: runs[0]!.id, skippedCount: 0, error: null })]);
    expect(body.nextTicks[0]).toBe(new Date(new Date(tick).getTime() + 60_000).toISOString());
    // The same tick again (a sweep late, another worker): still one run.
    await ticker().sweep(at(tick, 500));
    expect(await runsOf(schedule.id)).toHaveLength(1);
    // The next tick: a second run.
    await ticker().sweep(at(tick, 60_100));
    expect(await runsOf(schedule.id)).toHaveLength(2);
  });

  it('run the latest missed tick late within the catch-up window, and record the others as skipped', async () => {
    const schedule = await create({ catchUpSeconds: 600 });
    const first = schedule.nextTicks[0]!;
    // No worker looked for five minutes: ticks first … first+5 min are due.
    await ticker().sweep(at(first, 5 * 60_000 + 20_000));
    const runs = await runsOf(schedule.id);
    expect(runs).toHaveLength(1);
    const ticks = (await call('GET', `/v1/schedules/${schedule.id}/ticks`)).body.ticks;
    expect(ticks).toEqual([
      expect.objectContaining({ tickAt: at(first, 5 * 60_000).toISOString(), status: 'started', runId: runs[0]!.id }),
      expect.objectContaining({ tickAt: first, status: 'skipped', skippedThrough: at(first, 4 * 60_000).toISOString(), skippedCount: 5, runId: null, error: expect.objectContaining({ code: 'missed' }) }),
    ]);
  });

  it('skip and record every missed tick when the latest is older than the catch-up window', async () => {
    const schedule = await create({ catchUpSeconds: 10 });
    const first = schedule.nextTicks[0]!;
    await ticker().sweep(at(first, 2 * 60_000 + 30_000));
    expect(await runsOf(schedule.id)).toHaveLength(0);
    const ticks = (await call('GET', `/v1/schedules/${schedule.id}/ticks`)).body.ticks;
    expect(ticks).toEqual([expect.objectContaining({ tickAt: first, status: 'skipped', skippedThrough: at(first, 2 * 60_000).toISOString(), skippedCount: 3 })]);
    expect(ticks[0].error.message).toMatch(/more than catchUpSeconds \(10 s\) ago/);
    // The schedule goes on from the next tick after then.
    expect((await call('GET', `/v1/schedules/${schedule.id}`)).body.nextTicks[0]).toBe(at(first, 3 * 60_000).toISOString());
  });

  it('finish a tick a worker began: the run recorded with the tick is stored once, never a second', async () => {
    const schedule = await create({});
    const tick = schedule.nextTicks[0]!;
    // A worker recorded the tick with its run id, then died before storing the run.
    const lost = '7a0e6b8e-5d2c-4c7e-9b9a-2f4d6a8c0e11';
    await store.openTick(schedule.id, new Date(tick), lost);
    await ticker().sweep(at(tick, 100));
    expect((await runsOf(schedule.id)).map((run) => run.id)).toEqual([lost]);
    // Another worker stored the run and died before marking the tick and moving the schedule on.
    const next = at(tick, 60_000);
    const kept = 'c3b1d2e4-6f70-4a8b-9c1d-2e3f4a5b6c7d';
    await store.openTick(schedule.id, next, kept);
    await ticker().sweep(at(next.toISOString(), 100));
    await service.prisma.scheduleTick.update({ where: { scheduleId_tickAt: { scheduleId: schedule.id, tickAt: next } }, data: { status: 'starting' } });
    await service.prisma.schedule.update({ where: { id: schedule.id }, data: { nextAt: next, leaseToken: null, leaseUntil: null } });
    await ticker().sweep(at(next.toISOString(), 200));
    expect((await runsOf(schedule.id)).map((run) => run.id).sort()).toEqual([kept, lost].sort());
    const ticks = (await call('GET', `/v1/schedules/${schedule.id}/ticks`)).body.ticks as { status: string; runId: string }[];
    expect(ticks.map((t) => [t.status, t.runId])).toEqual([
      ['started', kept],
      ['started', lost],
    ]);
  });

  it('skip a tick whose run could take the month over its budget', async () => {
    const schedule = await create({ maxCostUsd: 0.001, monthlyBudgetUsd: 0.0025 });
    const tick = schedule.nextTicks[0]!;
    for (let i = 0; i < 3; i++) {
      await ticker().sweep(at(tick, i * 60_000 + 100));
      // Each run ends before the next tick: the budget counts its cost, not its cap.
      await eventually(async () => (await runsOf(schedule.id)).every((run) => run.status === 'completed') || null);
    }
    expect(await runsOf(schedule.id)).toHaveLength(2);
    const body = (await call('GET', `/v1/schedules/${schedule.id}`)).body;
    expect(body.spentThisMonthUsd).toBe(0.002);
    expect(body.status).toBe('active');
    expect(body.recentTicks[0]).toMatchObject({ status: 'skipped', skippedCount: 1, error: { code: 'monthly_budget' } });
    expect(body.recentTicks[0].error.message).toMatch(/\$0\.002 of its monthly budget of \$0\.0025/);
  });
});

describe('pausing', () => {
  it('by a caller: no run while paused, the paused ticks are not run late, resume goes on from now', async () => {
    const schedule = await create({});
    const tick = schedule.nextTicks[0]!;
    const paused = await call('POST', `/v1/schedules/${schedule.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', nextTicks: [], pauseReason: { code: 'paused', by: 'caller' } });
    await ticker().sweep(at(tick, 120_000));
    expect(await runsOf(schedule.id)).toHaveLength(0);
    const resumed = await call('POST', `/v1/schedules/${schedule.id}/resume`);
    expect(resumed.body).toMatchObject({ status: 'active', pauseReason: null });
    expect(new Date(resumed.body.nextTicks[0]).getTime()).toBeGreaterThan(Date.now());
    const listed = await call('GET', '/v1/schedules?status=paused&limit=100');
    expect(listed.body.schedules.map((s: { id: string }) => s.id)).not.toContain(schedule.id);
  });

  it("by a caller while a worker's tick was half begun: that tick is finished (its run stored once), and no other runs", async () => {
    const schedule = await create({});
    const tick = schedule.nextTicks[0]!;
    // A worker recorded the tick with its run id and died; the caller paused meanwhile.
    const lost = '5b2f0c1e-8d3a-4f6b-a1c2-3d4e5f607182';
    await store.openTick(schedule.id, new Date(tick), lost);
    expect((await call('POST', `/v1/schedules/${schedule.id}/pause`)).status).toBe(200);
    await ticker().sweep(at(tick, 120_000));
    expect((await runsOf(schedule.id)).map((run) => run.id)).toEqual([lost]);
    const ticks = (await call('GET', `/v1/schedules/${schedule.id}/ticks`)).body.ticks as { status: string; runId: string }[];
    expect(ticks.map((t) => [t.status, t.runId])).toEqual([['started', lost]]);
    const after = (await call('GET', `/v1/schedules/${schedule.id}`)).body;
    expect(after).toMatchObject({ status: 'paused', nextTicks: [] });
    // Nothing left to finish: later sweeps leave it alone.
    await ticker().sweep(at(tick, 240_000));
    expect(await runsOf(schedule.id)).toHaveLength(1);
    const row = await service.prisma.schedule.findUniqueOrThrow({ where: { id: schedule.id } });
    expect(row).toMatchObject({ nextAt: null, leaseToken: null });
  });

  it('by the service when its workflow is deleted: paused with the reason, the webhook signed and sent', async () => {
      await publishWorkflow(service, 'doomed', doubler);
      const org = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId }, select: { slug: true } });
      const created = await call('POST', '/v1/schedules', { workflowRef: `${org.slug}/doomed@1`, inputs: { n: { value: 1 } }, cron: '* * * * *' }, { 'Webhook-Url': `${receiver.url}/paused` });
      expect(created.status).toBe(201);
      const workflow = await service.prisma.workflow.findFirstOrThrow({ where: { slug: 'doomed', orgId: service.account.orgId } });
      expect((await call('DELETE', `/editor/workflows/${workflow.id}`)).status).toBe(204);
      await ticker().sweep(at(created.body.nextTicks[0], 100));
      const body = (await call('GET', `/v1/schedules/${created.body.id}`)).body;
      expect(body).toMatchObject({ status: 'paused', nextTicks: [], pauseReason: { code: 'workflow_not_found', by: 'service' }, webhook: { state: 'pending' } });
      expect(body.recentTicks[0]).toMatchObject({ status: 'failed', runId: null, error: { code: 'not_found' } });
      expect(await runsOf(created.body.id)).toHaveLength(0);
      await service.runtime.scheduleWebhooks!.sweep();
      expect(receiver.received).toHaveLength(1);
      const message = JSON.parse(receiver.received[0]!.body);
      expect(message).toMatchObject({ type: 'schedule.paused', data: { scheduleId: created.body.id, reason: { code: 'workflow_not_found' } } });
      const secret = (await call('GET', '/v1/webhooks/secret')).body.secret as string;
      // Signed with the organization's secret: the SDK's verifier accepts it.
      expect(() => verifyWebhook(secret, receiver.received[0]!.headers, receiver.received[0]!.body)).not.toThrow();
      expect((await call('GET', `/v1/schedules/${created.body.id}`)).body.webhook).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('by the service when the organization has no credit', async () => {
    const schedule = await create({});
    const { balanceMicros } = await service.prisma.organization.findUniqueOrThrow({ where: { id: service.account.orgId }, select: { balanceMicros: true } });
    await service.prisma.organization.update({ where: { id: service.account.orgId }, data: { balanceMicros: 0 } });
    try {
      await ticker().sweep(at(schedule.nextTicks[0]!, 100));
    } finally {
      await service.prisma.organization.update({ where: { id: service.account.orgId }, data: { balanceMicros } });
    }
    const body = (await call('GET', `/v1/schedules/${schedule.id}`)).body;
    expect(body).toMatchObject({ status: 'paused', pauseReason: { code: 'insufficient_credit', by: 'service' } });
    expect(body.pauseReason.message).toMatch(/resume the schedule once credit is added/);
    expect(body.recentTicks[0]).toMatchObject({ status: 'failed', error: { code: 'insufficient_credit' } });
  });
});

describe('deleting', () => {
  it('stops it for good; its runs keep its id', async () => {
    const schedule = await create({});
    await ticker().sweep(at(schedule.nextTicks[0]!, 100));
    const [run] = await runsOf(schedule.id);
    expect((await call('DELETE', `/v1/schedules/${schedule.id}`)).status).toBe(204);
    expect((await call('GET', `/v1/schedules/${schedule.id}`)).status).toBe(404);
    expect((await call('DELETE', `/v1/schedules/${schedule.id}`)).status).toBe(404);
    expect((await call('POST', `/v1/schedules/${schedule.id}/resume`)).status).toBe(404);
    await ticker().sweep(at(schedule.nextTicks[0]!, 120_100));
    expect((await runsOf(schedule.id)).map((r) => r.id)).toEqual([run!.id]);
    const listed = await call('GET', '/v1/schedules?limit=100');
    expect(listed.body.schedules.map((s: { id: string }) => s.id)).not.toContain(schedule.id);
  });

  it('answers 404 for an id that is not a schedule of the organization', async () => {
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000']) {
      const answer = await call('GET', `/v1/schedules/${id}`);
      expect(answer.status).toBe(404);
      expect(answer.body.error).toMatch(/no schedule .* in your organization; list yours with GET \/v1\/schedules/);
    }
  });
});

describe('schedules.list', () => {
  it('pages newest first', async () => {
    const made = [await create({ name: 'p1' }), await create({ name: 'p2' }), await create({ name: 'p3' })];
    const first = await call('GET', '/v1/schedules?limit=2');
    expect(first.body.schedules.map((s: { id: string }) => s.id)).toEqual([made[2]!.id, made[1]!.id]);
    const second = await call('GET', `/v1/schedules?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.schedules[0].id).toBe(made[0]!.id);
    const bad = await call('GET', '/v1/schedules?cursor=zzz');
    expect(bad.status).toBe(400);
  });
});
