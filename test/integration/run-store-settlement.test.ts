import { insufficientCredit, RunRepository, StepRepository, type Database, type LedgerRepository, type NewRun, type PrismaClient, type RunRecoveryRepository } from '../../services/store';
import type pg from 'pg';
import { FLUSH } from '../../services/store/hot-sql';
import { eventually } from '../support/eventually';
import { DIAMOND, fundedAccount, reserveOk as reserveStep, startHeldRun, startRun, stepsOf, useRunStore } from '../support/run-store-bench';

describe('run store: settling steps and runs', () => {
  const bench = useRunStore();
  let prisma: PrismaClient;
  let runs: RunRepository;
  let steps: StepRepository;
  let recovery: RunRecoveryRepository;
  let ledger: LedgerRepository;
  let warnings: Record<string, unknown>[];
  let pool: Database['pool'];

  beforeAll(() => {
    ({ prisma, runs, steps, recovery, ledger, warnings, pool } = bench.get());
  });

  const reserveOk = (runId: string, nodeId: string, estimateMicros: number) => reserveStep(steps, runId, nodeId, estimateMicros);

  it('stores a run with its first step already reserved when asked, inside the cap', async () => {
    const account = await fundedAccount(prisma, 'prereserved');
    const base = { orgId: account.orgId, userId: account.userId, tokenId: account.tokenId, definition: { version: 2, nodes: [] }, inputs: {}, capMicros: 50_000, start: true };
    const runId = await runs.createRun({ ...base, steps: [{ nodeId: 'x', pendingDeps: 0, reservation: { estimateMicros: 20_000, attemptToken: 'token-x' } }, { nodeId: 'y', pendingDeps: 1 }] });
    const run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ status: 'running', reservedMicros: 20_000 });
    expect(run.steps.find((s) => s.nodeId === 'x')).toMatchObject({ status: 'running', attempt: 1, reservedMicros: 20_000 });
    // Its worker commits with the token it was given; a retried job instead takes the step over, releasing what it held.
    const done = await steps.completeStep({ runId, nodeId: 'x', attemptToken: 'token-x', costMicros: 15_000, output: {}, ms: 1, dependents: ['y'] });
    expect(done).toMatchObject({ committed: true, chargedMicros: 15_000, ready: ['y'] });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ reservedMicros: 0, spentMicros: 15_000 });
    await runs.failRun(runId, { code: 'internal', message: 'test over' });

    await expect(runs.createRun({ ...base, steps: [{ nodeId: 'x', pendingDeps: 0, reservation: { estimateMicros: 50_001, attemptToken: 't' } }] })).rejects.toThrow('the reservations exceed the cap');
    await expect(runs.createRun({ ...base, start: false, steps: [{ nodeId: 'x', pendingDeps: 0, reservation: { estimateMicros: 1, attemptToken: 't' } }] })).rejects.toThrow('only a run stored running');
  });

  it('charges a commit once however often it is repeated, and repeats the ready set', async () => {
    const account = await fundedAccount(prisma, 'repeat', 1_000_000);
    const runId = await startRun(runs, account, { x: [], y: ['x'] }, 100_000);
    const x = await reserveOk(runId, 'x', 40_000);
    const commit = () => steps.completeStep({ runId, nodeId: 'x', attemptToken: x.attemptToken, costMicros: 30_000, output: { v: 1 }, ms: 4, dependents: ['y'] });
    const concurrent = await Promise.all([commit(), commit(), commit()]);
    expect(concurrent.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(concurrent.every((r) => r.committed && r.chargedMicros === 30_000 && r.ready.join() === 'y')).toBe(true);
    await expect(commit()).resolves.toEqual({ committed: true, duplicate: true, ready: ['y'], chargedMicros: 30_000, clamped: false, remaining: 1, runCompleted: false, followerCharges: [] });

    await expect(ledger.balance(account.orgId)).resolves.toBe(970_000);
    const run = (await runs.getRun(runId))!;
    expect(run.spentMicros).toBe(30_000);
    expect(run.steps.find((s) => s.nodeId === 'y')!.pendingDeps).toBe(0);
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
  });

  it('retries a transient failure as a new attempt: each attempt held against the cap, their costs summed and charged once', async () => {
    const account = await fundedAccount(prisma, 'retry', 1_000_000);
    const runId = await startRun(runs, account, { a: [], b: ['a'] }, 100_000);
    const a = await reserveOk(runId, 'a', 40_000);
    // The first attempt cost 10,000 (providers bill some failed calls); the second holds 40,000 more.
    await expect(steps.retryAttempt({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 10_000, estimateMicros: 40_000 })).resolves.toEqual({ ok: true, attempt: 2 });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 10_000, reservedMicros: 40_000 });
    // Only the owner may retry.
    await expect(steps.retryAttempt({ runId, nodeId: 'a', attemptToken: 'someone-else', costMicros: 0, estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'not_owner' });
    // Another attempt may hold what is left: 100,000 - 10,000 - 30,000 (this attempt, if charged) = 60,000; 60,001 does not fit.
    await expect(steps.retryAttempt({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 30_000, estimateMicros: 60_001 })).resolves.toEqual({ ok: false, reason: 'cap_exceeded' });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 10_000, reservedMicros: 40_000 });
    const done = await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 25_000, output: { v: 1 }, ms: 9, dependents: ['b'] });
    expect(done).toMatchObject({ committed: true, chargedMicros: 35_000, ready: ['b'], remaining: 1 });
    const run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ spentMicros: 35_000, reservedMicros: 0 });
    expect(run.steps.find((s) => s.nodeId === 'a')).toMatchObject({ attempt: 2, costMicros: 35_000 });
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 35_000);
  });

  it('charges the attempts a step already spent when its run fails around it', async () => {
    const account = await fundedAccount(prisma, 'retry-fail', 1_000_000);
    const runId = await startRun(runs, account, { a: [] }, 100_000);
    const a = await reserveOk(runId, 'a', 40_000);
    await expect(steps.retryAttempt({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 15_000, estimateMicros: 40_000 })).resolves.toMatchObject({ ok: true });
    const failed = await runs.failRun(runId, { code: 'run_timeout', message: 'too slow' });
    expect(failed).toMatchObject({ failed: true, releasedMicros: 40_000, cancelled: ['a'] });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'failed', spentMicros: 15_000, reservedMicros: 0 });
    // Retrying now: the step's own attempt hears that the run stopped; a stale one (a token the step no longer carries) that it is not the owner.
    await expect(steps.retryAttempt({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 0, estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'run_not_running' });
    await expect(steps.retryAttempt({ runId, nodeId: 'a', attemptToken: 'taken-over', costMicros: 0, estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'not_owner' });
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 15_000);
    // Failing it again charges nothing more.
    await runs.failRun(runId, { code: 'run_timeout', message: 'too slow' });
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 15_000);
  });

  it('completes the run with the last step’s commit when the caller hands over the run’s outputs', async () => {
    const account = await fundedAccount(prisma, 'fused', 1_000_000);
    const runId = await startRun(runs, account, { a: [], b: ['a'] }, 100_000);
    const a = await reserveOk(runId, 'a', 10);
    // Not the last step: the outputs are ignored and the run keeps running.
    const first = await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 1, output: { v: 1 }, ms: 1, dependents: ['b'], runOutputs: { out: { kind: 'int', value: 1 } } });
    expect(first).toMatchObject({ committed: true, remaining: 1, runCompleted: false });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'running', outputs: null });
    const b = await reserveOk(runId, 'b', 10);
    const last = await steps.completeStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 2, output: { v: 2 }, ms: 1, dependents: [], runOutputs: { out: { kind: 'int', value: 2 } } });
    expect(last).toMatchObject({ committed: true, remaining: 0, runCompleted: true });
    const run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ status: 'completed', outputs: { out: { kind: 'int', value: 2 } }, spentMicros: 3, reservedMicros: 0 });
    expect(run.finishedAt).toBeInstanceOf(Date);
    // Exactly once: completing it again is refused.
    await expect(runs.completeRun(runId, { out: { kind: 'int', value: 3 } })).resolves.toBe(false);
  });

  it("commits the run-finishing steps of one organization that queue in its process together, the organization's row written once; a faulty commit fails alone", async () => {
    const account = await fundedAccount(prisma, 'settle-batched', 5_000_000);
    // Run 0 has a second step: its commit does not finish it.
    const runIds = await Promise.all(Array.from({ length: 12 }, (_, i) => startHeldRun(runs, account, i === 0 ? { a: [], b: [] } : { a: [] }, 100_000)));
    const attempts = await Promise.all(runIds.map((runId) => reserveOk(runId, 'a', 40_000)));
    const commit = (i: number) => ({ runId: runIds[i]!, orgId: account.orgId, nodeId: 'a', attemptToken: attempts[i]!.attemptToken, costMicros: 30_000 + i, output: { i }, ms: 1,
                                    dependents: [], runOutputs: { out: { kind: 'int', value: i } } });
    // Run 5's commit claims a follower that costs more than its reservation: svc_complete_steps raises for the whole batch.
    const faulty = { ...commit(5), followers: [{ nodeId: 'b', costMicros: 50_000, estimateMicros: 50_000, output: {}, ms: 1, dependents: [] }] };
    // The first commit finds no settlement of the organization out and goes alone; the other eleven queue and go together.
    const settled = await Promise.allSettled(runIds.map((_, i) => steps.completeStep(i === 5 ? faulty : commit(i))));
    expect(settled.map((r) => r.status)).toEqual(runIds.map((_, i) => (i === 5 ? 'rejected' : 'fulfilled')));
    expect((settled[5] as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringContaining('cost more than its reservation') });
    for (const [i, r] of settled.entries()) {
      if (i !== 5) expect((r as PromiseFulfilledResult<unknown>).value).toMatchObject({ committed: true, chargedMicros: 30_000 + i, runCompleted: i !== 0 });
    }
    await expect(runs.getRun(runIds[0]!)).resolves.toMatchObject({ status: 'running', spentMicros: 30_000 });
    await expect(runs.getRun(runIds[3]!)).resolves.toMatchObject({ status: 'completed', outputs: { out: { kind: 'int', value: 3 } }, spentMicros: 30_003 });
    // Without run 5 the batch of eleven went again run by run: each in its own transaction (runs of one share its xmin).
    const { rows } = await pool.query<{ transactions: number }>(`SELECT count(DISTINCT xmin::text)::int AS transactions FROM runs WHERE id = ANY($1::uuid[])`, [runIds]);
    expect(rows[0]!.transactions).toBe(12);
    for (const runId of runIds) await runs.failRun(runId, { code: 'internal', message: 'test over' });

    // No faulty one: two transactions, the second settling eleven runs and writing the organization's row once for them.
    const more = await Promise.all(Array.from({ length: 12 }, () => startHeldRun(runs, account, { a: [] }, 100_000)));
    const taken = await Promise.all(more.map((runId) => reserveOk(runId, 'a', 40_000)));
    const done = await Promise.all(more.map((runId, i) => steps.completeStep({ runId, orgId: account.orgId, nodeId: 'a', attemptToken: taken[i]!.attemptToken, costMicros: 1_000,
                                                                                 output: {}, ms: 1, dependents: [], runOutputs: { out: { kind: 'int', value: i } } })));
    expect(done.every((d) => d.committed && d.runCompleted)).toBe(true);
    const { rows: [together] } = await pool.query<{ transactions: number; org_written_last: boolean }>(
      `SELECT count(DISTINCT r.xmin::text)::int AS transactions, bool_or(r.xmin = o.xmin) AS org_written_last
       FROM runs r JOIN organizations o ON o.id = r.org_id WHERE r.id = ANY($1::uuid[])`, [more]);
    expect(together).toEqual({ transactions: 2, org_written_last: true });
    // Charged: 30_000 + i for each i but 5 (330_061), then 1_000 each (12_000).
    await expect(ledger.audit(account.orgId)).resolves.toEqual({ balanceMicros: 5_000_000 - 342_061, ledgerTotalMicros: 5_000_000 - 342_061 });
  });

  it('reserves the dependent the caller runs next in the same commit, within the cap', async () => {
    const account = await fundedAccount(prisma, 'chained', 1_000_000);
    const runId = await startRun(runs, account, { a: [], b: ['a'], c: ['b'] }, 50);
    const a = await reserveOk(runId, 'a', 10);
    const doneA = await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 10, output: {}, ms: 1, dependents: ['b'], next: { nodeId: 'b', estimateMicros: 30 } });
    expect(doneA).toMatchObject({ committed: true, ready: [], next: { ok: true, attempt: 1, attemptToken: expect.any(String) } });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 10, reservedMicros: 30 });
    // The reservation belongs to the caller: nobody else can start b, and b commits with the token it got.
    await expect(steps.reserve({ runId, nodeId: 'b', estimateMicros: 1, staleAfterMs: 60_000 })).resolves.toEqual({ ok: false, reason: 'step_not_runnable' });
    const token = doneA.next!.ok ? doneA.next!.attemptToken : '';
    // c would need 20 more once b is settled: 10 + 25 spent + 20 > 50. Nothing is held for it and it stays ready.
    const doneB = await steps.completeStep({ runId, nodeId: 'b', attemptToken: token, costMicros: 25, output: {}, ms: 1, dependents: ['c'], next: { nodeId: 'c', estimateMicros: 20 } });
    expect(doneB).toMatchObject({ committed: true, ready: ['c'], next: { ok: false, reason: 'cap_exceeded' } });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 35, reservedMicros: 0 });
    expect((await runs.getRun(runId))!.steps.find((x) => x.nodeId === 'c')).toMatchObject({ status: 'pending', attempt: 0 });
  });

  it("holds a group's worst cases beside its head's when they fit, and commits its siblings with it, skipping one another attempt took", async () => {
    const account = await fundedAccount(prisma, 'grouped', 1_000_000);
    const runId = await startRun(runs, account, { s: [], a: ['s'], b: ['s'], c: ['s'], d: ['c'] }, 100);
    const s = await reserveOk(runId, 's', 10);
    await steps.completeStep({ runId, nodeId: 's', attemptToken: s.attemptToken, costMicros: 10, output: {}, ms: 1, dependents: ['a', 'b', 'c'] });
    // 10 spent: a's 20 and its siblings' 60 fit in 100; 71 beside it would not (a alone is held then).
    await expect(steps.reserve({ runId, nodeId: 'a', estimateMicros: 20, groupMicros: 71 })).resolves.toMatchObject({ ok: true, groupHeld: false });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ reservedMicros: 20 });
    const a = await steps.reserve({ runId, nodeId: 'a', estimateMicros: 20, groupMicros: 60 });
    expect(a).toMatchObject({ ok: true, groupHeld: true });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ reservedMicros: 80 });
    // b was taken meanwhile by an attempt of its own (a job of its own that the reaper gave it): the group's commit skips it, charges nothing for it and leaves it running.
    const b = await reserveOk(runId, 'b', 10);
    const follower = (nodeId: string, dependents: string[]) => ({ nodeId, costMicros: 25, estimateMicros: 30, output: { v: nodeId }, ms: 1, dependents, skippable: true });
    const token = a.ok ? a.attemptToken : '';
    const done = await steps.completeStep({ runId, nodeId: 'a', attemptToken: token, costMicros: 15, output: {}, ms: 1, dependents: [], followers: [follower('b', []), follower('c', ['d'])] });
    expect(done).toMatchObject({ committed: true, chargedMicros: 15, followerCharges: [null, 25], ready: ['d'], remaining: 2 });
    const run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ spentMicros: 10 + 15 + 25, reservedMicros: 10 });
    expect(Object.fromEntries(run.steps.map((x) => [x.nodeId, x.status]))).toEqual({ s: 'completed', a: 'completed', b: 'running', c: 'completed', d: 'pending' });
    expect(run.steps.find((x) => x.nodeId === 'b')).toMatchObject({ reservedMicros: 10, costMicros: 0 });
    await expect(steps.completeStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 10, output: {}, ms: 1, dependents: [] })).resolves.toMatchObject({ committed: true, chargedMicros: 10 });
    // The same commit repeated is answered as it was (b skipped, c charged), and changes nothing.
    await expect(steps.completeStep({ runId, nodeId: 'a', attemptToken: token, costMicros: 15, output: {}, ms: 1, dependents: [], followers: [follower('b', []), follower('c', ['d'])] })).resolves.toMatchObject({ duplicate: true, followerCharges: [null, 25] });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 60, reservedMicros: 0 });
    await expect(prisma.ledgerEntry.count({ where: { runId } })).resolves.toBe(4);
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
  });

  it('commits followers in their order: one made ready only by a follower after it was not ready at its turn; a join unblocked by two followers at once is ready after them', async () => {
    const account = await fundedAccount(prisma, 'follower-order', 1_000_000);
    // h, y and z are ready; x waits for y; j joins y and z.
    const runId = await startRun(runs, account, { h: [], y: [], z: [], x: ['y'], j: ['y', 'z'] }, 1_000);
    const h = await reserveOk(runId, 'h', 500);
    const follower = (nodeId: string, dependents: string[]) => ({ nodeId, costMicros: 10, estimateMicros: 10, output: { v: nodeId }, ms: 1, dependents });
    // x before y: x is not ready when its turn comes, although y, ready already, would unblock it. Nothing is kept.
    await expect(steps.completeStep({ runId, nodeId: 'h', attemptToken: h.attemptToken, costMicros: 10, output: {}, ms: 1, dependents: [], followers: [follower('x', []), follower('y', ['x', 'j'])] })).rejects.toThrow(/x of run .* was not ready/);
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 0, reservedMicros: 500 });
    // y, z (ready already), then x (made ready by y): all committed; j made ready by y and z together.
    const done = await steps.completeStep({ runId, nodeId: 'h', attemptToken: h.attemptToken, costMicros: 10, output: {}, ms: 1, dependents: [], followers: [follower('y', ['x', 'j']), follower('z', ['j']), follower('x', [])] });
    expect(done).toMatchObject({ committed: true, followerCharges: [10, 10, 10], ready: ['j'], remaining: 1 });
    const run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ spentMicros: 40, reservedMicros: 0 });
    expect(run.steps.find((x) => x.nodeId === 'j')).toMatchObject({ status: 'pending', pendingDeps: 0 });
    await expect(prisma.ledgerEntry.count({ where: { runId } })).resolves.toBe(4);
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
  });

  it("defers an unfinished run's charges off its organization's row (ledger, balance and available exact meanwhile) and settles them when the run ends, however it ends", async () => {
    const account = await fundedAccount(prisma, 'deferred', 1_000_000);
    const orgRow = async () => {
      const row = await prisma.organization.findUniqueOrThrow({ where: { id: account.orgId }, select: { balanceMicros: true, heldMicros: true } });
      return { balance: Number(row.balanceMicros), held: Number(row.heldMicros) };
    };
    const runRow = async (runId: string) => {
      const row = await prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { chargedMicros: true, settledMicros: true, heldMicros: true } });
      return { charged: Number(row.chargedMicros), settled: Number(row.settledMicros), held: Number(row.heldMicros) };
    };
    // Each way a run ends: its last commit, a failing step, its own failure.
    const endings: [string, (runId: string) => Promise<unknown>][] = [
      ['completed by its last commit', async (runId) => {
        const c = await reserveOk(runId, 'c', 10_000);
        await steps.completeStep({ runId, nodeId: 'c', attemptToken: c.attemptToken, costMicros: 4_000, output: {}, ms: 1, dependents: [], runOutputs: { done: true } });
      }],
      ['failed by a step', async (runId) => {
        const c = await reserveOk(runId, 'c', 10_000);
        await steps.failStep({ runId, nodeId: 'c', attemptToken: c.attemptToken, costMicros: 4_000, error: { code: 'node_failed', message: 'boom' }, ms: 1 });
      }],
      ['failed on its own', (runId) => runs.failRun(runId, { code: 'run_timeout', message: 'too slow' })],
    ];
    let balance = 1_000_000;
    for (const [how, end] of endings) {
      const runId = await startHeldRun(runs, account, { a: [], b: ['a'], c: ['b'] }, 100_000);
      const before = await orgRow();
      expect(before).toEqual({ balance, held: 100_000 });
      for (const [node, dependent, cost] of [['a', 'b', 7_000], ['b', 'c', 3_000]] as const) {
        const step = await reserveOk(runId, node, 20_000);
        await expect(steps.completeStep({ runId, nodeId: node, attemptToken: step.attemptToken, costMicros: cost, output: {}, ms: 1, dependents: [dependent] })).resolves.toMatchObject({ committed: true, chargedMicros: cost });
      }
      // The ledger and the run have the charges; the organization row has not moved: it still counts them as held.
      await expect(runRow(runId)).resolves.toEqual({ charged: 10_000, settled: 0, held: 90_000 });
      await expect(orgRow()).resolves.toEqual(before);
      await expect(ledger.balance(account.orgId)).resolves.toBe(balance - 10_000);
      await expect(ledger.audit(account.orgId)).resolves.toEqual({ balanceMicros: balance - 10_000, ledgerTotalMicros: balance - 10_000 });
      const spent = how === 'failed on its own' ? 10_000 : 14_000;
      await end(runId);
      const run = await runRow(runId);
      expect({ how, ...run }).toEqual({ how, charged: spent, settled: spent, held: 0 });
      balance -= spent;
      expect({ how, ...(await orgRow()) }).toEqual({ how, balance, held: 0 });
      await expect(ledger.balance(account.orgId)).resolves.toBe(balance);
    }
  });

  /**
   * A pool that records each round trip the repositories send: its text, whether the function
   * committed without waiting for its flush (`unflushed`), and for a call that sent its own flush
   * in the same round trip (three results), whether that flush wrote WAL and waited.
   */
  function recordingPool() {
    let clock = 0;
    const sent: { text: string; name: string | null; own: boolean; unflushed: boolean; flushed: boolean; runId: string | null; sent: number; returned: number }[] = [];
    const recording = {
      query: async (query: string | pg.QueryConfig, params?: unknown[]) => {
        const at = ++clock;
        const text = typeof query === 'string' ? query : query.text;
        const name = typeof query === 'string' ? null : (query.name ?? null);
        const result = (await pool.query(query as pg.QueryConfig, params)) as unknown as pg.QueryResult | pg.QueryResult[];
        const own = Array.isArray(result);
        const row = (own ? result[0]!.rows[0] : result.rows[0]) as { out?: { results?: { id: string }[] }; unflushed?: boolean | string } | undefined;
        const unflushed = String(row?.unflushed) === 'true';
        const flushed = own && (result[2]!.rows[0] as { flushed: string | null }).flushed !== null;
        sent.push({ text: text.replace(/\s+/g, ' ').slice(0, 60), name, own, unflushed, flushed, runId: unflushed ? (row?.out?.results?.[0]?.id ?? null) : null, sent: at, returned: ++clock });
        return result;
      },
    } as unknown as Database['pool'];
    return { sent, recording, tick: () => ++clock };
  }

  it("releases the organization row's lock before its commit's flush, and waits for that flush before answering, only where the row was written; alone, in the call's own round trip", async () => {
    const { sent, recording } = recordingPool();
    const recordedRuns = new RunRepository({ prisma, pool: recording });
    const recordedSteps = new StepRepository({ pool: recording });
    const account = await fundedAccount(prisma, 'flush', 1_000_000);
    const view = () => sent.map(({ own, unflushed, flushed }) => ({ own, unflushed, flushed }));
    const runId = await startHeldRun(recordedRuns, account, { a: [], b: ['a'] }, 100_000);
    // The creation locked and wrote the organization row: committed without waiting, then
    // flushed in the same round trip (nothing else of the pool was in flight to share a flush with).
    expect(view()).toEqual([{ own: true, unflushed: true, flushed: true }]);
    const a = await reserveOk(runId, 'a', 20_000);
    // The argument travels as a quoted literal: quotes, backslashes and escapes arrive intact.
    const output = { text: 'it\'s a \\ "quoted" \u2028 line\n', escaped: '\\u0041', tab: '\t' };
    await recordedSteps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 5_000, output, ms: 1, dependents: ['b'] });
    await expect(pool.query("SELECT output FROM steps WHERE run_id = $1 AND node_id = 'a'", [runId])).resolves.toMatchObject({ rows: [{ output }] });
    // A commit of an unfinished run leaves the organization row alone: an ordinary synchronous
    // commit, and the flush statement that follows it writes nothing and waits for nothing.
    expect(view().slice(1)).toEqual([{ own: true, unflushed: false, flushed: false }]);
    const b = await reserveOk(runId, 'b', 20_000);
    await recordedSteps.completeStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 5_000, output: {}, ms: 1, dependents: [], runOutputs: {} });
    // The last commit settles the run on the organization row: flushed before it answered.
    expect(view().slice(2)).toEqual([{ own: true, unflushed: true, flushed: true }]);
    expect(sent.some((s) => s.text === FLUSH)).toBe(false);
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'completed', spentMicros: 10_000 });
    // Each call left the connection as it found it: the settings are cleared or the transaction's alone.
    await expect(pool.query("SELECT current_setting('svc.flush_after_commit', true) AS s, current_setting('svc.flush_pending', true) AS p"))
      .resolves.toMatchObject({ rows: [{ s: '', p: '' }] });
  });

  it('shares one flush among the commits that returned before it was sent, and never answers a commit with a flush sent before it returned', async () => {
    const { sent: statements, recording, tick } = recordingPool();
    const recordedRuns = new RunRepository({ prisma, pool: recording });
    const accounts = await Promise.all(Array.from({ length: 16 }, (_, i) => fundedAccount(prisma, `flush-group-${i}`, 1_000_000)));
    // Sixteen organizations: no two creations share a transaction, and each needs a flush.
    const answered = new Map(await Promise.all(accounts.map(async (account) => [await startHeldRun(recordedRuns, account, { a: [] }, 100_000), tick()] as const)));
    const creations = statements.filter((st) => st.runId !== null);
    expect(creations.map((c) => c.runId).sort()).toEqual([...answered.keys()].sort());
    // A creation sent with nothing else in flight flushed itself; those sent beside it share flushes.
    const shared = creations.filter((c) => !c.own);
    expect(creations.filter((c) => c.own).every((c) => c.flushed)).toBe(true);
    expect(shared.length).toBeGreaterThanOrEqual(8);
    const flushes = statements.filter((st) => st.text === FLUSH);
    expect(flushes.length).toBeGreaterThanOrEqual(1);
    expect(flushes.length).toBeLessThan(shared.length);
    // Sent beside others, the call and the flush are named statements, each parsed and planned once per connection.
    expect(new Set(shared.map((c) => c.name))).toEqual(new Set(['svc_call_svc_create_runs']));
    expect(new Set(flushes.map((f) => f.name))).toEqual(new Set(['svc_flush']));
    // Each shared creation's caller was answered after a flush sent after the creation returned had returned.
    for (const creation of shared) {
      expect(flushes.some((f) => f.sent > creation.returned && f.returned < answered.get(creation.runId!)!)).toBe(true);
    }
  });

  it("commits an unfinished run's charged step without locking its organization's row, not even as a foreign key's check does", async () => {
    const account = await fundedAccount(prisma, 'no-org-lock', 1_000_000);
    const runId = await startHeldRun(runs, account, { a: [], b: ['a'], c: ['b'] }, 100_000);
    const a = await reserveOk(runId, 'a', 20_000);
    // FOR UPDATE conflicts with every row lock, FOR KEY SHARE (a foreign key's check) included: a
    // commit that locked the organization's row would wait for this transaction.
    const locker = await pool.connect();
    let waited = false;
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM organizations WHERE id = $1::uuid FOR UPDATE', [account.orgId]);
      let done = false;
      const commit = steps
        .completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 5_000, output: {}, ms: 1, dependents: ['b'], next: { nodeId: 'b', estimateMicros: 20_000 } })
        .finally(() => (done = true));
      while (!done && !waited) {
        const blocked = await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%svc_complete_step%'");
        waited = blocked.rowCount !== 0;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await locker.query('ROLLBACK');
      await expect(commit).resolves.toMatchObject({ committed: true, chargedMicros: 5_000, next: { ok: true } });
    } finally {
      locker.release();
    }
    expect(waited).toBe(false);
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 5_000);
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
  });

  it("writes a run's row once per transition, charge and settlement included (a second update re-checks the row's foreign keys, locking the organization row)", async () => {
    const account = await fundedAccount(prisma, 'one-write', 1_000_000);
    const client = await pool.connect();
    // The run row's updates made by one call, counted by Postgres inside the call's transaction
    // (before and after: the view also counts earlier transactions whose counts it has not flushed).
    const updatesOfRuns = async () =>
      (await client.query<{ n: number }>("SELECT COALESCE(sum(n_tup_upd), 0)::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'runs'")).rows[0]!.n;
    const runUpdates = async (fn: string, args: Record<string, unknown>): Promise<number> => {
      await client.query('BEGIN');
      try {
        const before = await updatesOfRuns();
        await client.query(`SELECT ${fn}($1::jsonb)`, [JSON.stringify(args)]);
        return (await updatesOfRuns()) - before;
      } finally {
        await client.query('COMMIT');
      }
    };
    const boom = { code: 'node_failed', message: 'boom' };
    const chain = await startHeldRun(runs, account, { a: [], b: ['a'] }, 100_000);
    try {
      const a = await reserveOk(chain, 'a', 20_000);
      const commit = { node_id: 'a', attempt_token: a.attemptToken, cost_micros: 5_000, output: {}, ms: 1, dependents: ['b'] };
      await expect(runUpdates('svc_complete_step', { run_id: chain, ...commit })).resolves.toBe(1);
      const b = await reserveOk(chain, 'b', 20_000);
      const last = { node_id: 'b', attempt_token: b.attemptToken, cost_micros: 6_000, output: {}, ms: 1, dependents: [], run_outputs: { done: true } };
      await expect(runUpdates('svc_complete_step', { run_id: chain, ...last })).resolves.toBe(1);

      const failing = await startHeldRun(runs, account, { a: [], b: ['a'] }, 100_000);
      const f = await reserveOk(failing, 'a', 20_000);
      await expect(runUpdates('svc_fail_step', { run_id: failing, node_id: 'a', attempt_token: f.attemptToken, cost_micros: 3_000, error: boom, ms: 1 })).resolves.toBe(1);

      const stopped = await startHeldRun(runs, account, { a: [], b: ['a'] }, 100_000);
      await reserveOk(stopped, 'a', 20_000);
      await expect(runUpdates('svc_fail_run', { run_id: stopped, error: { code: 'run_timeout', message: 'too slow' }, culprit_node_id: null })).resolves.toBe(1);

      const outer = await startHeldRun(runs, account, { a: [] }, 100_000);
      await expect(runUpdates('svc_complete_run', { run_id: outer, outputs: {} })).resolves.toBe(1);
    } finally {
      client.release();
    }
    await expect(runs.getRun(chain)).resolves.toMatchObject({ status: 'completed', spentMicros: 11_000 });
    await expect(ledger.audit(account.orgId)).resolves.toEqual({ balanceMicros: 1_000_000 - 14_000, ledgerTotalMicros: 1_000_000 - 14_000 });
    await expect(prisma.organization.findUniqueOrThrow({ where: { id: account.orgId } })).resolves.toMatchObject({ heldMicros: 0n, balanceMicros: BigInt(1_000_000 - 14_000) });
  });

  it("answers a credit with the balance after it when a run's settlement committed while the credit waited for the organization row", async () => {
    const account = await fundedAccount(prisma, 'credit-race', 1_000_000);
    const runId = await startHeldRun(runs, account, { a: [], b: ['a'] }, 100_000);
    const a = await reserveOk(runId, 'a', 20_000);
    await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 24, output: {}, ms: 1, dependents: ['b'] });
    // The run's 24 micro-USD are deferred; its failure settles them on the organization row, in a
    // transaction held open while the credit queues behind its lock on that row.
    const settling = await pool.connect();
    try {
      await settling.query('BEGIN');
      await settling.query('SELECT svc_fail_run($1::jsonb)', [JSON.stringify({ run_id: runId, error: { code: 'internal', message: 'test over' }, culprit_node_id: null })]);
      const credit = ledger.credit(account.orgId, 1_000, 'during a settlement');
      await eventually(async () => (await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO ledger_entries%'")).rowCount === 1, { what: 'the credit to wait for the organization row' });
      await settling.query('COMMIT');
      await expect(credit).resolves.toMatchObject({ balanceMicros: 1_000_000 - 24 + 1_000 });
    } finally {
      settling.release();
    }
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 24 + 1_000);
  });

  it('clamps a cost above the reservation to the reservation and logs it', async () => {
    const account = await fundedAccount(prisma, 'clamp', 1_000_000);
    const runId = await startRun(runs, account, { x: [] }, 10_000);
    const x = await reserveOk(runId, 'x', 10_000);
    const done = await steps.completeStep({ runId, nodeId: 'x', attemptToken: x.attemptToken, costMicros: 25_000, output: {}, ms: 1, dependents: [] });
    expect(done).toMatchObject({ committed: true, chargedMicros: 10_000, clamped: true });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 10_000, reservedMicros: 0 });
    await expect(ledger.balance(account.orgId)).resolves.toBe(990_000);
    expect(warnings).toContainEqual(expect.objectContaining({ runId, nodeId: 'x', costMicros: 25_000, reservedMicros: 10_000 }));
    await runs.completeRun(runId, {});
  });

  it('fails a step: charges what the attempt cost, skips what had not started, fails the run', async () => {
    const account = await fundedAccount(prisma, 'fail', 1_000_000);
    const dag = { ...DIAMOND, e: [] };
    const runId = await startRun(runs, account, dag, 500_000);
    const a = await reserveOk(runId, 'a', 100_000);
    await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 100_000, output: {}, ms: 1, dependents: ['b', 'c'] });
    const [b, c] = await Promise.all([reserveOk(runId, 'b', 100_000), reserveOk(runId, 'c', 100_000)]);

    const error = { code: 'provider_error', message: 'upstream said 500' };
    const failed = await steps.failStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 70_000, error, ms: 9 });
    expect(failed).toEqual({ committed: true, chargedMicros: 70_000, clamped: false, runFailed: true, skipped: ['d', 'e'] });
    let run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ status: 'failed', error, spentMicros: 170_000, reservedMicros: 100_000 });
    expect(Object.fromEntries(run.steps.map((s) => [s.nodeId, s.status]))).toEqual({ a: 'completed', b: 'failed', c: 'running', d: 'skipped', e: 'skipped' });
    expect(run.steps.find((s) => s.nodeId === 'b')).toMatchObject({ costMicros: 70_000, ms: 9, error });

    // Nothing new starts; the attempt still in flight settles what it really spent, readies nothing.
    await expect(steps.reserve({ runId, nodeId: 'e', estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'run_not_running' });
    await expect(steps.completeStep({ runId, nodeId: 'c', attemptToken: c.attemptToken, costMicros: 20_000, output: {}, ms: 1, dependents: ['d'] })).resolves.toMatchObject({ committed: true, ready: [] });
    await expect(steps.failStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 70_000, error })).resolves.toMatchObject({ committed: false });
    run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ status: 'failed', error, spentMicros: 190_000, reservedMicros: 0 });
    await expect(runs.completeRun(runId, {})).resolves.toBe(false);
    await expect(ledger.balance(account.orgId)).resolves.toBe(810_000);
  });

  it('fails a run on its own: in-flight attempts are cancelled and their reservations released', async () => {
    const account = await fundedAccount(prisma, 'failrun', 1_000_000);
    const runId = await startRun(runs, account, { x: [], y: [], z: ['x'] }, 300_000);
    const x = await reserveOk(runId, 'x', 200_000);
    await expect(steps.reserve({ runId, nodeId: 'y', estimateMicros: 200_000 })).resolves.toEqual({ ok: false, reason: 'cap_exceeded' });

    const error = { code: 'spend_cap_exceeded', message: 'y needs more than the cap leaves' };
    await expect(runs.failRun(runId, error)).resolves.toEqual({ failed: true, releasedMicros: 200_000, cancelled: ['x'], skipped: ['y', 'z'] });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'failed', error, reservedMicros: 0, spentMicros: 0 });
    await expect(steps.completeStep({ runId, nodeId: 'x', attemptToken: x.attemptToken, costMicros: 1, output: {}, ms: 1, dependents: ['z'] })).resolves.toMatchObject({ committed: false });
    await expect(runs.failRun(runId, { code: 'internal', message: 'again' })).resolves.toEqual({ failed: false, releasedMicros: 0, cancelled: [], skipped: [] });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ error });
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000);
  });

  it('completes a run exactly once, and only a running one', async () => {
    const account = await fundedAccount(prisma, 'once');
    const runId = await runs.createRun({ orgId: account.orgId, userId: account.userId, tokenId: null, definition: {}, inputs: { q: 1 }, capMicros: 1, steps: [] });
    await expect(runs.completeRun(runId, { out: 0 })).resolves.toBe(false);
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'pending', inputs: { q: 1 }, tokenId: null, startedAt: null });
    const started = await Promise.all([runs.markRunning(runId), runs.markRunning(runId)]);
    expect(started.filter(Boolean)).toHaveLength(1);
    const completed = await Promise.all(Array.from({ length: 8 }, (_, i) => runs.completeRun(runId, { out: i })));
    expect(completed.filter(Boolean)).toHaveLength(1);
    const winner = completed.indexOf(true);
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'completed', outputs: { out: winner } });
    await expect(runs.failRun(runId, { code: 'internal', message: 'too late' })).resolves.toMatchObject({ failed: false });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ status: 'completed', error: null });
  });

  it('names the key a function call lacks, svc_arg being an expression Postgres inlines into its callers', async () => {
    await expect(pool.query(`SELECT svc_create_runs('{"runs": []}'::jsonb)`)).rejects.toThrow('svc_arg: the argument object has no key "org_id"');
    await expect(pool.query(`SELECT svc_arg(NULL, 'x')`)).rejects.toThrow('svc_arg: the argument object has no key "x"');
    await expect(pool.query(`SELECT svc_arg('{"k": null}'::jsonb, 'k') AS v`)).resolves.toMatchObject({ rows: [{ v: null }] });
    // Inlined, the call is planned as its expression: no call of svc_arg is left.
    const plan = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (VERBOSE, COSTS OFF) SELECT svc_arg(inputs, 'k') FROM runs`);
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).not.toContain('svc_arg(');
    expect(text).toContain("(inputs ->> 'k'::text)");
  });

  it('creates a run and its steps atomically', async () => {
    const account = await fundedAccount(prisma, 'atomic');
    const before = await prisma.run.count();
    const base: NewRun = { orgId: account.orgId, userId: account.userId, tokenId: account.tokenId, definition: {}, inputs: {}, capMicros: 1_000, steps: [] };
    await expect(runs.createRun({ ...base, steps: [{ nodeId: 'a', pendingDeps: 0 }, { nodeId: 'a', pendingDeps: 1 }] })).rejects.toThrow(RangeError);
    await expect(runs.createRun({ ...base, capMicros: -1 })).rejects.toThrow(RangeError);
    // A failing step insert (a negative count passes JS only if forced; use a missing user) rolls the run back.
    await expect(runs.createRun({ ...base, userId: '00000000-0000-0000-0000-000000000000', steps: [{ nodeId: 'a', pendingDeps: 0 }] })).rejects.toThrow();
    await expect(prisma.run.count()).resolves.toBe(before);
    const runId = await runs.createRun({ ...base, workflowId: null, steps: stepsOf(DIAMOND) });
    const run = (await runs.getRun(runId))!;
    expect(run.steps.map((s) => [s.nodeId, s.status, s.pendingDeps, s.attempt])).toEqual([
      ['a', 'pending', 0, 0],
      ['b', 'pending', 1, 0],
      ['c', 'pending', 1, 0],
      ['d', 'pending', 2, 0],
    ]);
    await expect(steps.reserve({ runId, nodeId: 'a', estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'run_not_running' });
  });

  it("stores the creations of one organization that queue in its process together: each holds in order, a refused or faulty one fails alone", async () => {
    // One creation transaction of an organization at a time: the others queue and go together.
    const batched = new RunRepository({ prisma, pool }, { creationsPerOrg: 1 });
    const account = await fundedAccount(prisma, 'batched', 2_500_000);
    const settled = await Promise.allSettled(Array.from({ length: 40 }, () => startHeldRun(batched, account, { a: [] }, 100_000)));
    // In arrival order, as one after another: 25 runs hold 100_000 each, then nothing is left.
    expect(settled.map((r) => r.status)).toEqual([...Array<string>(25).fill('fulfilled'), ...Array<string>(15).fill('rejected')]);
    for (const r of settled.slice(25)) expect((r as PromiseRejectedResult).reason).toEqual(insufficientCredit(0));
    // The first went alone; the 39 that queued behind it went as one batch of 32 and one of 7 (runs of one transaction share its xmin).
    const [stored] = (await pool.query<{ runs: number; transactions: number; held: string }>(
      `SELECT count(*)::int AS runs, count(DISTINCT r.xmin::text)::int AS transactions, max(o.held_micros)::text AS held
       FROM runs r JOIN organizations o ON o.id = r.org_id WHERE r.org_id = $1::uuid`, [account.orgId])).rows;
    expect(stored).toEqual({ runs: 25, transactions: 2, held: '2500000' });

    // A run that names no user fails alone: the batch it was in is sent again run by run.
    const other = await fundedAccount(prisma, 'batched-faulty');
    const unknownUser = '00000000-0000-0000-0000-000000000000';
    const mixed = await Promise.allSettled([other.userId, other.userId, unknownUser, other.userId].map((userId) =>
      batched.createRun({ orgId: other.orgId, userId, tokenId: null, definition: {}, inputs: {}, capMicros: 1_000, steps: stepsOf({ a: [] }) })));
    expect(mixed.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((mixed[2] as PromiseRejectedResult).reason).toMatchObject({ code: '23503' });
    await expect(prisma.run.count({ where: { orgId: other.orgId } })).resolves.toBe(3);

    // An organization that does not exist: every creation of the batch is told so.
    const missing = await Promise.allSettled(Array.from({ length: 3 }, () =>
      batched.createRun({ orgId: '00000000-0000-4000-8000-000000000001', userId: other.userId, tokenId: null, definition: {}, inputs: {}, capMicros: 1_000, steps: [] })));
    for (const r of missing) expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'not_found', message: 'organization 00000000-0000-4000-8000-000000000001 does not exist' });
  });

  it('finds stuck attempts and ready steps for the reaper', async () => {
    const account = await fundedAccount(prisma, 'reaper');
    const runId = await startRun(runs, account, { x: [], y: [], z: ['x'] }, 100_000);
    const x = await reserveOk(runId, 'x', 10_000);
    const stuck = await recovery.findStuck({ startedBefore: new Date(Date.now() + 60_000) });
    expect(stuck.filter((s) => s.runId === runId)).toEqual([{ runId, nodeId: 'x', attempt: 1, startedAt: expect.any(Date) }]);
    await expect(recovery.findStuck({ startedBefore: new Date(Date.now() - 60_000) }).then((s) => s.filter((r) => r.runId === runId))).resolves.toEqual([]);
    await expect(recovery.listRunnable({ runId })).resolves.toEqual([{ runId, nodeId: 'y' }]);
    await steps.completeStep({ runId, nodeId: 'x', attemptToken: x.attemptToken, costMicros: 5_000, output: {}, ms: 1, dependents: ['z'] });
    await expect(recovery.listRunnable({ runId })).resolves.toEqual([
      { runId, nodeId: 'y' },
      { runId, nodeId: 'z' },
    ]);
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
    await expect(recovery.listRunnable({ runId })).resolves.toEqual([]);
  });
});
