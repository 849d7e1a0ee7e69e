import type { RunEvent } from '../../services/contract';
import { Prisma, RunRepository, StepRepository } from '../../services/store';
import { eventually } from '../support/eventually';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { exited, startWorkerProcess } from '../support/worker-process';

/** Workers started as processes take seconds to get going. */
const slowly = { timeoutMs: 20_000, intervalMs: 50 };

const chain = {
  version: 2,
  nodes: [
    { id: 'first', uses: 'math-add', inputs: { a: 1, b: 1 } },
    { id: 'second', uses: 'math-multiply', inputs: { a: '${first.result}', b: 10 } },
    { id: 'out', uses: 'output', inputs: { value: '${second.result}' } },
  ],
};

async function startRun(service: TestService, workflow: unknown): Promise<{ runId: string; stream: Promise<RunEvent[]> }> {
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ workflow }),
  });
  expect(res.status).toBe(200);
  const stream = readSse(res).then((messages) => messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent));
  const runId = await eventually(async () => (await service.prisma.run.findFirst({ where: { orgId: service.account.orgId }, orderBy: { createdAt: 'desc' } }))?.id, { ...slowly, what: 'the run row' });
  return { runId, stream };
}

describe('recovery: killed workers and lost jobs', () => {
  let service: TestService;

  beforeAll(async () => {
    // API only here: steps run in the worker processes each test starts.
    service = await startTestService({ env: { ROLE: 'api', STEP_LOCK_MS: '1500', STREAM_RECORD_CHECK_MS: '1000' } });
  });

  afterAll(async () => {
    await service?.close();
  });

  it('completes a run exactly once when its worker is SIGKILLed in the middle of a step', async () => {
    // The doomed worker pauses inside every step, after its reservation, until it is killed.
    const doomed = startWorkerProcess(service, { SVC_FAILPOINTS: 'step.afterReserve=sleep(60000)', STEP_LOCK_MS: '1500' });
    let rescuer: Awaited<ReturnType<TestService['extra']>> | undefined;
    try {
      const { runId, stream } = await startRun(service, chain);
      const runs = new RunRepository(service.database);
      // The step is reserved with the run: it is running in the doomed worker once that worker holds its job.
      await eventually(async () => (await service.runtime.queue.counts()).active > 0 && (await runs.getRun(runId))?.steps.find((s) => s.nodeId === 'first' && s.status === 'running'), { ...slowly, what: 'the first step to be running in the doomed worker' });
      const held = (await runs.getRun(runId))!;
      expect(held.reservedMicros).toBeGreaterThan(0);
      doomed.kill('SIGKILL');
      await exited(doomed);

      // A healthy worker: BullMQ hands it the dead worker's job once its lock has expired.
      rescuer = await service.extra({ ROLE: 'worker', STEP_LOCK_MS: '1500' });
      const events = await stream;
      expect(events.filter((e) => e.type === 'run.completed')).toEqual([{ type: 'run.completed', outputs: { out: { kind: 'float', value: 20 } } }]);
      expect(events.filter((e) => e.type === 'run.failed')).toEqual([]);
      expect(events.filter((e) => e.type === 'step.completed').map((e) => (e as { nodeId: string }).nodeId)).toEqual(['first', 'second']);

      const run = (await runs.getRun(runId))!;
      expect(run).toMatchObject({ status: 'completed', reservedMicros: 0, spentMicros: 2 });
      // The first step was taken over: a second attempt, charged once.
      expect(run.steps.find((s) => s.nodeId === 'first')).toMatchObject({ status: 'completed', attempt: 2, costMicros: 1 });
      const charges = await service.prisma.ledgerEntry.findMany({ where: { runId } });
      expect(charges.map((c) => Number(c.amountMicros)).sort()).toEqual([-1, -1]);
    } finally {
      if (doomed.exitCode === null && doomed.signalCode === null) doomed.kill('SIGKILL');
      await rescuer?.close();
    }
  });

  it('ends the stream with the run record\'s terminal event when the worker dies between completing the run and announcing it', async () => {
    // The doomed worker exits right after the commit that completed the run, before appending run.completed.
    const doomed = startWorkerProcess(service, { SVC_FAILPOINTS: 'run.beforeAnnounce=exit(137)' });
    try {
      const { runId, stream } = await startRun(service, chain);
      await exited(doomed);
      const runs = new RunRepository(service.database);
      expect(await runs.getRun(runId)).toMatchObject({ status: 'completed', reservedMicros: 0, spentMicros: 2 });
      expect(await service.runtime.bus.read(runId)).not.toContainEqual(expect.objectContaining({ event: expect.objectContaining({ type: 'run.completed' }) }));

      // No worker is left: the API reads the record after a silence and ends the stream with it.
      const events = await stream;
      expect(events[0]).toEqual({ type: 'run.started', runId });
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { out: { kind: 'float', value: 20 } } });
      expect(events.filter((e) => e.type === 'run.completed' || e.type === 'run.failed')).toHaveLength(1);

      // The replay route ends the same way, and runs.node-style readers see the same outputs in the record.
      const replay = await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: bearer(service.account.token) });
      const replayed = (await readSse(replay)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
      expect(replayed.at(-1)).toEqual(events.at(-1));
    } finally {
      if (doomed.exitCode === null && doomed.signalCode === null) doomed.kill('SIGKILL');
    }
  });

  it('recovers a step that ran inline (in its predecessor’s job) when that worker is SIGKILLed', async () => {
    // The second step runs inline in the first step's job; the doomed worker pauses inside it.
    const doomed = startWorkerProcess(service, { SVC_FAILPOINTS: 'step.afterReserve:second=sleep(60000)', STEP_LOCK_MS: '1500' });
    let rescuer: Awaited<ReturnType<TestService['extra']>> | undefined;
    try {
      const { runId, stream } = await startRun(service, chain);
      const runs = new RunRepository(service.database);
      await eventually(async () => (await runs.getRun(runId))?.steps.find((s) => s.nodeId === 'second' && s.status === 'running'), { ...slowly, what: 'the second step to be running in the doomed worker' });
      // No job of this run waits: the second step runs inside the first one's job. (Only this run's
      // jobs count: the job the previous test's worker died holding goes back to waiting once this
      // worker's stalled-job check finds it.)
      const queued = await service.runtime.queue.queue.getJobs(['waiting', 'delayed', 'prioritized']);
      expect(queued.filter((job) => (job.data as { runId?: string }).runId === runId)).toEqual([]);
      doomed.kill('SIGKILL');
      await exited(doomed);

      // BullMQ hands the first step's job out again; that step is done, so its orphaned dependent is enqueued and taken over.
      rescuer = await service.extra({ ROLE: 'worker', STEP_LOCK_MS: '1500' });
      const events = await stream;
      expect(events.filter((e) => e.type === 'run.completed')).toEqual([{ type: 'run.completed', outputs: { out: { kind: 'float', value: 20 } } }]);
      const run = (await runs.getRun(runId))!;
      expect(run).toMatchObject({ status: 'completed', reservedMicros: 0, spentMicros: 2 });
      expect(run.steps.find((s) => s.nodeId === 'first')).toMatchObject({ attempt: 1 });
      expect(run.steps.find((s) => s.nodeId === 'second')).toMatchObject({ status: 'completed', attempt: 2, costMicros: 1 });
    } finally {
      if (doomed.exitCode === null && doomed.signalCode === null) doomed.kill('SIGKILL');
      await rescuer?.close();
    }
  });

  it('re-enqueues steps whose jobs were lost (Redis emptied) from Postgres, and completes the run', async () => {
    const { runId, stream } = await startRun(service, chain);
    // No worker is running: the first step's job waits in Redis. Lose it, as a Redis restarted empty would.
    await eventually(async () => (await service.runtime.queue.counts()).waiting > 0, { ...slowly, what: 'the first job' });
    await service.runtime.queue.queue.obliterate({ force: true });
    expect(await service.runtime.queue.counts()).toMatchObject({ waiting: 0, active: 0 });
    // The first step (a local node, the run's only first step) was reserved with the run: running, held, never started.
    const held = (await new RunRepository(service.database).getRun(runId))!;
    expect(held.steps.find((s) => s.nodeId === 'first')).toMatchObject({ status: 'running', attempt: 1 });
    expect(held.reservedMicros).toBeGreaterThan(0);

    const worker = await service.extra({ ROLE: 'worker' });
    try {
      const report = await worker.reaper!.sweep();
      expect(report.requeued).toBe(1);
      const events = await stream;
      expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { out: { kind: 'float', value: 20 } } });
      expect((await new RunRepository(service.database).getRun(runId))!.status).toBe('completed');
      // A second sweep finds nothing left to do.
      expect(await worker.reaper!.sweep()).toEqual({ timedOut: 0, completed: 0, requeued: 0, failed: 0, settled: 0, keysExpired: 0 });
    } finally {
      await worker.close();
    }
  });

  it('completes a run whose last step finished but whose completion was never written', async () => {
    const runs = new RunRepository(service.database);
    const worker = await service.extra({ ROLE: 'worker' });
    try {
      const { runId, stream } = await startRun(service, chain);
      await stream;
      // Rewind the run to "all steps completed, run still running", as a crash between the two writes leaves it.
      await service.prisma.run.update({ where: { id: runId }, data: { status: 'running', outputs: Prisma.DbNull, finishedAt: null } });
      await service.prisma.step.updateMany({ where: { runId }, data: { finishedAt: new Date(Date.now() - 60_000) } });
      const report = await worker.reaper!.sweep();
      expect(report.completed).toBe(1);
      expect(await runs.getRun(runId)).toMatchObject({ status: 'completed', outputs: { out: { kind: 'float', value: 20 } } });
    } finally {
      await worker.close();
    }
  });

  it('settles an attempt lost with its worker after a sibling step failed the run: charged its lost charge, nothing held, once no job may run it', async () => {
    const runs = new RunRepository(service.database);
    const steps = new StepRepository(service.database);
    const side = { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 1, b: 1 } }, { id: 'b', uses: 'math-add', inputs: { a: 2, b: 2 } }, { id: 'out', uses: 'output', inputs: { value: '${a.result}' } }] };
    const { runId, stream } = await startRun(service, side);
    // No worker runs: the first steps wait in Redis (in one job, or two). Two attempts start, as two workers' would,
    // holding 5,000 micro-USD each and to be charged that much if lost (as a node that calls out is).
    await eventually(async () => (await service.runtime.queue.counts()).waiting > 0, { ...slowly, what: 'the first job' });
    const a = await steps.reserve({ runId, nodeId: 'a', estimateMicros: 5000, lostChargeMicros: 5000 });
    const b = await steps.reserve({ runId, nodeId: 'b', estimateMicros: 5000, lostChargeMicros: 5000 });
    if (!a.ok || !b.ok) throw new Error('both attempts should start');
    // b's attempt fails the run (as a takeover refused by the cap does); a's worker is dead, so a stays running.
    expect(await steps.failStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 1000, ms: 5, error: { code: 'spend_cap_exceeded', message: 'no room' } })).toMatchObject({ committed: true, runFailed: true });
    expect(await runs.getRun(runId)).toMatchObject({ status: 'failed', reservedMicros: 5000 });
    // The organization's holds are its runs' holds plus its unfinished runs' deferred charges (docs/money.md).
    const orgHoldsBalance = async () =>
      (
        await service.database.pool.query<{ ok: boolean }>(
          `SELECT o.held_micros = (SELECT COALESCE(sum(held_micros + charged_micros - settled_micros), 0) FROM runs WHERE org_id = o.id) AS ok FROM organizations o WHERE o.id = $1`,
          [service.account.orgId],
        )
      ).rows[0]!.ok;

    // Paused: the jobs stay waiting, so the reaper finds a job that may still run a.
    await service.runtime.queue.queue.pause();
    const worker = await service.extra({ ROLE: 'worker', STEP_STUCK_SECONDS: '5' });
    try {
      // Not yet past STEP_STUCK_SECONDS: its worker may be alive and about to settle it.
      expect((await worker.reaper!.sweep()).settled).toBe(0);
      const later = new Date(Date.now() + 6000);
      // Past it, but a job (its own, or its group's) may still run it: left alone.
      expect((await worker.reaper!.sweep(later)).settled).toBe(0);
      // The job is gone (delivered and dropped, or Redis lost it): the attempt is settled like any lost one.
      await service.runtime.queue.queue.obliterate({ force: true });
      expect((await worker.reaper!.sweep(later)).settled).toBe(1);
      const run = (await runs.getRun(runId))!;
      expect(run).toMatchObject({ status: 'failed', error: { code: 'spend_cap_exceeded' }, reservedMicros: 0 });
      expect(run.steps.find((s) => s.nodeId === 'a')).toMatchObject({ status: 'cancelled' });
      const { rows } = await service.database.pool.query<{ spent: string; charged: string; held: string; cost_a: string; ledger: string }>(
        `SELECT r.spent_micros::text AS spent, r.charged_micros::text AS charged, r.held_micros::text AS held,
                (SELECT cost_micros::text FROM steps WHERE run_id = r.id AND node_id = 'a') AS cost_a,
                (SELECT (-COALESCE(sum(amount_micros), 0))::text FROM ledger_entries WHERE run_id = r.id AND kind = 'run_charge') AS ledger
           FROM runs r WHERE r.id = $1`,
        [runId],
      );
      // a is charged its lost charge (5,000), b what it reported (1,000): the run's cost is what the ledger charged.
      expect(rows[0]).toEqual({ spent: '6000', charged: '6000', held: '0', cost_a: '5000', ledger: '6000' });
      expect(await orgHoldsBalance()).toBe(true);
      expect((await worker.reaper!.sweep(later)).settled).toBe(0);
      // The client's stream had ended with the run's failure; nothing more is announced.
      expect((await stream).at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'spend_cap_exceeded' } });
    } finally {
      await service.runtime.queue.queue.resume();
      await worker.close();
    }
  });

  it('fails a run that outlives the run timeout, so every run ends', async () => {
    const { runId, stream } = await startRun(service, chain);
    await service.prisma.run.update({ where: { id: runId }, data: { startedAt: new Date(Date.now() - 60_000) } });
    // A worker stuck inside the first step (a provider that never answers), so the run cannot end by itself.
    const worker = await service.extra({ ROLE: 'worker', RUN_TIMEOUT_SECONDS: '10', SVC_FAILPOINTS: 'step.afterReserve=sleep(2000)' });
    try {
      const report = await worker.reaper!.sweep();
      expect(report.timedOut).toBe(1);
      const events = await stream;
      expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'run_timeout' } });
      expect(await new RunRepository(service.database).getRun(runId)).toMatchObject({ status: 'failed', reservedMicros: 0 });
    } finally {
      await worker.close();
    }
  });
});
