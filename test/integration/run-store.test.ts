import type { LedgerRepository, PrismaClient, RunRecoveryRepository, RunRepository, StepRepository } from '../../services/store';
import { DIAMOND, dependentsOf, fundedAccount, reserveOk as reserveStep, startRun, useRunStore } from '../support/run-store-bench';

describe('run store', () => {
  const bench = useRunStore();
  let prisma: PrismaClient;
  let runs: RunRepository;
  let steps: StepRepository;
  let recovery: RunRecoveryRepository;
  let ledger: LedgerRepository;

  beforeAll(() => {
    ({ prisma, runs, steps, recovery, ledger } = bench.get());
  });

  const reserveOk = (runId: string, nodeId: string, estimateMicros: number) => reserveStep(steps, runId, nodeId, estimateMicros);

  it('runs a diamond a → (b, c) → d: each completion hands over exactly the steps it made ready', async () => {
    const account = await fundedAccount(prisma, 'diamond', 5_000_000);
    const runId = await startRun(runs, account, DIAMOND, 500_000);
    await expect(recovery.listRunnable({ runId })).resolves.toEqual([{ runId, nodeId: 'a' }]);
    await expect(steps.reserve({ runId, nodeId: 'd', estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'step_not_runnable' });

    const a = await reserveOk(runId, 'a', 100_000);
    expect(a.attempt).toBe(1);
    const doneA = await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 80_000, output: { text: 'A' }, ms: 12, dependents: dependentsOf(DIAMOND, 'a') });
    expect(doneA).toEqual({ committed: true, duplicate: false, ready: ['b', 'c'], chargedMicros: 80_000, clamped: false, remaining: 3, runCompleted: false, followerCharges: [] });

    const [b, c] = await Promise.all([reserveOk(runId, 'b', 50_000), reserveOk(runId, 'c', 60_000)]);
    const doneB = await steps.completeStep({ runId, nodeId: 'b', attemptToken: b.attemptToken, costMicros: 50_000, output: { text: 'B' }, ms: 5, dependents: ['d'] });
    expect(doneB.ready).toEqual([]);
    const doneC = await steps.completeStep({ runId, nodeId: 'c', attemptToken: c.attemptToken, costMicros: 0, output: { text: 'C' }, ms: 7, dependents: ['d'] });
    expect(doneC.ready).toEqual(['d']);

    await expect(runs.stepInputs(runId, ['b', 'c', 'd'])).resolves.toEqual(new Map([['b', { text: 'B' }], ['c', { text: 'C' }]]));
    const d = await reserveOk(runId, 'd', 10_000);
    // The last step's commit says so: the caller completes the run.
    await expect(steps.completeStep({ runId, nodeId: 'd', attemptToken: d.attemptToken, costMicros: 9_000, output: { text: 'D' }, ms: 3, dependents: [] })).resolves.toMatchObject({ committed: true, ready: [], remaining: 0 });
    await expect(runs.completeRun(runId, { result: 'D' })).resolves.toBe(true);

    const run = await runs.getRun(runId, account.orgId);
    expect(run).toMatchObject({ id: runId, status: 'completed', outputs: { result: 'D' }, capMicros: 500_000, spentMicros: 139_000, reservedMicros: 0, error: null });
    expect(run!.finishedAt).toBeInstanceOf(Date);
    // b and c started together, so their order by start time is either; compare by node id.
    expect(run!.steps.map((s) => [s.nodeId, s.status, s.costMicros, s.ms]).sort()).toEqual([
      ['a', 'completed', 80_000, 12],
      ['b', 'completed', 50_000, 5],
      ['c', 'completed', 0, 7],
      ['d', 'completed', 9_000, 3],
    ]);
    await expect(ledger.balance(account.orgId)).resolves.toBe(5_000_000 - 139_000);
    // Zero-cost steps post nothing; the others one charge each.
    await expect(ledger.entries(account.orgId).then((e) => e.filter((x) => x.kind === 'run_charge').length)).resolves.toBe(3);
  });

  it('hides a run from another organization and ignores ids that are not UUIDs', async () => {
    const owner = await fundedAccount(prisma, 'owner');
    const other = await fundedAccount(prisma, 'other');
    const runId = await startRun(runs, owner, { a: [] }, 1_000);
    await expect(runs.getRun(runId, other.orgId)).resolves.toBeNull();
    await expect(runs.getRun(runId)).resolves.toMatchObject({ id: runId, orgId: owner.orgId, status: 'running' });
    await expect(runs.getRun('not-a-uuid')).resolves.toBeNull();
    await expect(steps.reserve({ runId: 'nope', nodeId: 'a', estimateMicros: 1 })).resolves.toEqual({ ok: false, reason: 'run_not_running' });
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
  });

  it('lets 50 concurrent reserves on one run take only what the cap allows', async () => {
    const account = await fundedAccount(prisma, 'burst', 50_000_000);
    const dag = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`n${i}`, [] as string[]]));
    const cap = 1_000_000;
    const estimate = 30_000; // 33 fit (990_000), 17 do not
    const runId = await startRun(runs, account, dag, cap);

    const results = await Promise.all(Object.keys(dag).map((nodeId) => steps.reserve({ runId, nodeId, estimateMicros: estimate }).then((r) => ({ nodeId, r }))));
    const granted = results.filter((x) => x.r.ok);
    expect(granted).toHaveLength(33);
    expect(results.filter((x) => !x.r.ok && x.r.reason === 'cap_exceeded')).toHaveLength(17);
    let run = (await runs.getRun(runId))!;
    expect(run.reservedMicros).toBe(33 * estimate);

    // Settle concurrently at varying costs (some above the estimate: clamped), then let the
    // refused ones try again in the room the cheaper ones left.
    await Promise.all(
      granted.map(({ nodeId, r }, i) =>
        r.ok ? steps.completeStep({ runId, nodeId, attemptToken: r.attemptToken, costMicros: i % 3 === 0 ? 40_000 : 10_000, output: {}, ms: 1, dependents: [] }) : null,
      ),
    );
    const refused = results.filter((x) => !x.r.ok).map((x) => x.nodeId);
    const retried = await Promise.all(refused.map((nodeId) => steps.reserve({ runId, nodeId, estimateMicros: estimate }).then((r) => ({ nodeId, r }))));
    await Promise.all(
      retried.map(({ nodeId, r }) => (r.ok ? steps.completeStep({ runId, nodeId, attemptToken: r.attemptToken, costMicros: estimate, output: {}, ms: 1, dependents: [] }) : null)),
    );
    run = (await runs.getRun(runId))!;
    expect(run.reservedMicros).toBe(0);
    expect(run.spentMicros).toBeLessThanOrEqual(cap);
    expect(run.spentMicros).toBe(run.steps.reduce((sum, s) => sum + s.costMicros, 0));
    expect(retried.filter((x) => x.r.ok).length).toBeGreaterThan(0);
    expect(run.steps.filter((s) => s.status === 'completed')).toHaveLength(33 + retried.filter((x) => x.r.ok).length);
  });

  it('keeps every one of many parallel runs within its cap', async () => {
    const account = await fundedAccount(prisma, 'fleet', 100_000_000);
    const dag = { a: [], b: [], c: ['a'], d: ['a', 'b'], e: ['c', 'd'], f: ['e'], g: ['e'], h: [] };
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };

    /** Drives one run like a pool of workers would: every ready step runs at once. */
    async function drive(runId: string): Promise<void> {
      const work = async (nodeId: string): Promise<void> => {
        const estimate = 20_000 + random(60_000);
        const reserved = await steps.reserve({ runId, nodeId, estimateMicros: estimate });
        if (!reserved.ok) {
          if (reserved.reason === 'cap_exceeded') await runs.failRun(runId, { code: 'spend_cap_exceeded', message: `no room for ${nodeId}` });
          return;
        }
        // Costs up to 20% above the estimate: those are clamped.
        const cost = random(Math.floor(estimate * 1.2));
        const done = await steps.completeStep({ runId, nodeId, attemptToken: reserved.attemptToken, costMicros: cost, output: { nodeId }, ms: 1, dependents: dependentsOf(dag, nodeId) });
        await Promise.all(done.ready.map(work));
      };
      await Promise.all(Object.entries(dag).filter(([, deps]) => deps.length === 0).map(([id]) => work(id)));
      await runs.completeRun(runId, {});
    }

    const caps = Array.from({ length: 24 }, (_, i) => 60_000 + i * 15_000);
    const runIds = await Promise.all(caps.map((cap) => startRun(runs, account, dag, cap)));
    await Promise.all(runIds.map(drive));
    const finished = await Promise.all(runIds.map((id) => runs.getRun(id)));
    for (const [i, run] of finished.entries()) {
      expect(run!.spentMicros).toBeLessThanOrEqual(caps[i]!);
      expect(run!.reservedMicros).toBe(0);
      expect(['completed', 'failed']).toContain(run!.status);
    }
    expect(finished.some((r) => r!.status === 'failed')).toBe(true);
    expect(finished.some((r) => r!.status === 'completed')).toBe(true);
  });

  it('races a step failure against reserves and completions of the same run without deadlock or leak', async () => {
    const account = await fundedAccount(prisma, 'race', 100_000_000);
    const width = 30;
    const dag: Record<string, string[]> = { root: [], ...Object.fromEntries(Array.from({ length: width }, (_, i) => [`w${i}`, [] as string[]])) };
    for (let i = 0; i < width; i++) dag[`after${i}`] = [`w${i}`];
    for (let round = 0; round < 5; round++) {
      const runId = await startRun(runs, account, dag, 10_000_000);
      const root = await reserveOk(runId, 'root', 1_000);
      const half = await Promise.all(Array.from({ length: width / 2 }, (_, i) => reserveOk(runId, `w${i}`, 10_000)));
      // At once: the root fails, the first half completes (readying their `after` steps), the second half reserves.
      const outcomes = await Promise.all([
        steps.failStep({ runId, nodeId: 'root', attemptToken: root.attemptToken, costMicros: 500, error: { code: 'provider_error', message: 'boom' } }),
        ...half.map((r, i) => steps.completeStep({ runId, nodeId: `w${i}`, attemptToken: r.attemptToken, costMicros: 7_000, output: {}, ms: 1, dependents: [`after${i}`] })),
        ...Array.from({ length: width / 2 }, (_, i) => steps.reserve({ runId, nodeId: `w${width / 2 + i}`, estimateMicros: 10_000 })),
      ]);
      expect(outcomes[0]).toMatchObject({ committed: true, runFailed: true });
      const run = (await runs.getRun(runId))!;
      expect(run.status).toBe('failed');
      // Whatever reserved before the failure still runs and holds its money; nothing else does.
      const running = run.steps.filter((s) => s.status === 'running');
      expect(run.reservedMicros).toBe(running.length * 10_000);
      expect(run.steps.filter((s) => s.status === 'pending' || s.status === 'queued')).toEqual([]);
      await runs.failRun(runId, { code: 'internal', message: 'round over' });
    }
  });

  it('ignores a stale attempt once a retry took the step over', async () => {
    const account = await fundedAccount(prisma, 'stale');
    const runId = await startRun(runs, account, { a: ['x'], x: [] }, 200_000);
    const first = await reserveOk(runId, 'x', 50_000);
    // A live attempt is not taken over while it is younger than staleAfterMs...
    await expect(steps.reserve({ runId, nodeId: 'x', estimateMicros: 50_000, staleAfterMs: 60_000 })).resolves.toEqual({ ok: false, reason: 'step_not_runnable' });
    // ...but a redelivered job (the first worker's lock expired) takes it over.
    const second = await reserveOk(runId, 'x', 70_000);
    expect(second.attempt).toBe(2);
    expect(second.attemptToken).not.toBe(first.attemptToken);

    await expect(steps.completeStep({ runId, nodeId: 'x', attemptToken: first.attemptToken, costMicros: 1, output: { late: true }, ms: 1, dependents: ['a'] })).resolves.toMatchObject({ committed: false, ready: [] });
    await expect(steps.failStep({ runId, nodeId: 'x', attemptToken: first.attemptToken, costMicros: 1, error: { code: 'provider_error', message: 'late' } })).resolves.toMatchObject({ committed: false });
    let run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ status: 'running', reservedMicros: 70_000, spentMicros: 0 });
    expect(run.steps.find((s) => s.nodeId === 'a')!.pendingDeps).toBe(1);

    const done = await steps.completeStep({ runId, nodeId: 'x', attemptToken: second.attemptToken, costMicros: 65_000, output: { ok: true }, ms: 2, dependents: ['a'] });
    expect(done).toMatchObject({ committed: true, ready: ['a'], chargedMicros: 65_000 });
    run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ reservedMicros: 0, spentMicros: 65_000 });
    await expect(runs.stepInputs(runId, ['x'])).resolves.toEqual(new Map([['x', { ok: true }]]));
    await runs.failRun(runId, { code: 'internal', message: 'test over' });
  });

  it('releases the reservation of a crashed attempt when the step is retried', async () => {
    const account = await fundedAccount(prisma, 'crash');
    const runId = await startRun(runs, account, { x: [] }, 500_000);
    await reserveOk(runId, 'x', 400_000);
    // The worker dies here. Were the old 400_000 still held, 400_000 more would not fit the cap.
    const retry = await reserveOk(runId, 'x', 400_000);
    expect(retry.attempt).toBe(2);
    await expect(runs.getRun(runId)).resolves.toMatchObject({ reservedMicros: 400_000 });
    await steps.completeStep({ runId, nodeId: 'x', attemptToken: retry.attemptToken, costMicros: 300_000, output: {}, ms: 1, dependents: [] });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ reservedMicros: 0, spentMicros: 300_000 });
    await runs.completeRun(runId, {});
  });

  it('holds the rest of the cap as a lease only while nothing else of the run is running or ready, and commits followers inside it', async () => {
    const account = await fundedAccount(prisma, 'lease', 1_000_000);
    // a → b → c → d, and a → e: after a, both b and e are ready, so b gets no lease.
    const dag = { a: [], b: ['a'], c: ['b'], d: ['c'], e: ['a'] };
    const runId = await startRun(runs, account, dag, 100_000);
    const a = await reserveOk(runId, 'a', 10_000);
    const doneA = await steps.completeStep({ runId, nodeId: 'a', attemptToken: a.attemptToken, costMicros: 5_000, output: { v: 'a' }, ms: 1, dependents: ['b', 'e'], next: { nodeId: 'b', estimateMicros: 10_000, lease: true } });
    expect(doneA.next).toMatchObject({ ok: true, leaseMicros: 0 });
    expect(doneA.ready).toEqual(['e']);
    const e = await reserveOk(runId, 'e', 10_000);
    await steps.completeStep({ runId, nodeId: 'e', attemptToken: e.attemptToken, costMicros: 1_000, output: {}, ms: 1, dependents: [] });

    // Alone now: b's successor c is reserved with all the room left as its lease.
    const bToken = (doneA.next as { attemptToken: string }).attemptToken;
    const doneB = await steps.completeStep({ runId, nodeId: 'b', attemptToken: bToken, costMicros: 4_000, output: { v: 'b' }, ms: 1, dependents: ['c'], next: { nodeId: 'c', estimateMicros: 10_000, lease: true } });
    // 100,000 - spent (5,000 + 1,000 + 4,000) - c's 10,000.
    expect(doneB.next).toMatchObject({ ok: true, leaseMicros: 80_000 });
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 10_000, reservedMicros: 90_000 });
    const cToken = (doneB.next as { attemptToken: string }).attemptToken;

    // Followers that would spend more than c holds roll the whole commit back.
    const tooMuch = { nodeId: 'd', costMicros: 95_000, estimateMicros: 95_000, output: {}, ms: 1, dependents: [] };
    await expect(steps.completeStep({ runId, nodeId: 'c', attemptToken: cToken, costMicros: 1, output: {}, ms: 1, dependents: ['d'], followers: [tooMuch] })).rejects.toThrow(/cost more than its reservation/);
    // A follower that is not ready when its turn comes does too.
    const early = { nodeId: 'd', costMicros: 1, estimateMicros: 1, output: {}, ms: 1, dependents: [] };
    await expect(steps.completeStep({ runId, nodeId: 'c', attemptToken: cToken, costMicros: 1, output: {}, ms: 1, dependents: [], followers: [early] })).rejects.toThrow(/was not ready/);
    await expect(runs.getRun(runId)).resolves.toMatchObject({ spentMicros: 10_000, reservedMicros: 90_000 });

    // c and its follower d in one commit: each charged its own (d clamped to what was counted for it), the lease released, the run done.
    const d = { nodeId: 'd', costMicros: 7_000, estimateMicros: 6_000, output: { v: 'd' }, ms: 2, dependents: [] };
    const doneC = await steps.completeStep({ runId, nodeId: 'c', attemptToken: cToken, costMicros: 3_000, output: { v: 'c' }, ms: 1, dependents: ['d'], followers: [d], runOutputs: { out: 'd' } });
    expect(doneC).toMatchObject({ committed: true, chargedMicros: 3_000, followerCharges: [6_000], ready: [], remaining: 0, runCompleted: true });
    const run = (await runs.getRun(runId))!;
    expect(run).toMatchObject({ status: 'completed', spentMicros: 19_000, reservedMicros: 0, outputs: { out: 'd' } });
    expect(run.steps.find((s) => s.nodeId === 'd')).toMatchObject({ status: 'completed', costMicros: 6_000 });
    await expect(runs.stepInputs(runId, ['d'])).resolves.toEqual(new Map([['d', { v: 'd' }]]));
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 19_000);
    // Repeated, the commit changes nothing and says what its followers were charged.
    await expect(steps.completeStep({ runId, nodeId: 'c', attemptToken: cToken, costMicros: 3_000, output: { v: 'c' }, ms: 1, dependents: ['d'], followers: [d] })).resolves.toMatchObject({ duplicate: true, followerCharges: [6_000] });
    await expect(ledger.balance(account.orgId)).resolves.toBe(1_000_000 - 19_000);
  });

});
