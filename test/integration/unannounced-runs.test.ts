import { setTimeout as sleep } from 'node:timers/promises';
import { bearer, startTestService, type TestService } from '../support/service';

/**
 * A run stored but never announced (appending its `run.started` failed: Redis went away between
 * the run's commit and its first event) is answered with an error, so its client will send the
 * request again. That run must not run as well, and be charged, beside the one sent again: it is
 * failed in Postgres before the error is answered, and the reaper leaves it alone. The failpoint
 * `run.announce` stands in for the failed append.
 */

const workflow = {
  version: 2,
  nodes: [
    { id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } },
    { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } },
  ],
};

describe('a run whose start could not be announced', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ env: { SVC_FAILPOINTS: 'run.announce=throw(the event log is unreachable)', REAPER_INTERVAL_SECONDS: '1' } });
  });
  afterAll(async () => service?.close());

  it('is answered with an error and failed at once, and nothing of it ever runs', async () => {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow }),
    });
    expect(res.status).toBeGreaterThanOrEqual(500);
    await res.text();
    const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: service.account.orgId }, include: { steps: true } });
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'unavailable' });
    // Several reaper sweeps later, still nothing ran and nothing is held.
    await sleep(3000);
    const after = await service.prisma.run.findUniqueOrThrow({ where: { id: run.id }, include: { steps: true } });
    expect(after.status).toBe('failed');
    expect(after.steps.map((s) => ({ node: s.nodeId, started: s.startedAt !== null, status: s.status }))).toEqual([{ node: 'a', started: false, status: expect.not.stringMatching(/^(completed|running)$/) }]);
    expect(Number(after.heldMicros)).toBe(0);
  });

  it('gives its idempotency key back: the request sent again with it starts a run rather than attach to the failed one', async () => {
    const key = 'unannounced-key-1';
    const send = () =>
      fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json', 'Idempotency-Key': key }, body: JSON.stringify({ workflow }) }).then(async (res) => {
        await res.text();
        return res.status;
      });
    expect(await send()).toBeGreaterThanOrEqual(500);
    const { rows } = await service.database.pool.query(`SELECT 1 FROM idempotency_keys WHERE key = $1`, [key]);
    expect(rows).toEqual([]);
    const before = await service.prisma.run.count({ where: { orgId: service.account.orgId } });
    // The log is still unreachable here, so the new run fails too: but it is a new run, not the failed one attached to.
    expect(await send()).toBeGreaterThanOrEqual(500);
    expect(await service.prisma.run.count({ where: { orgId: service.account.orgId } })).toBe(before + 1);
  });
});
