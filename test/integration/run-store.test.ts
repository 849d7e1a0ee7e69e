import { Writable } from 'node:stream';
import pino from 'pino';
import {
  createDatabase,
  LedgerRepository,
  RunRecoveryRepository,
  RunRepository,
  StepRepository,
  type Database,
  type NewRun,
  type PrismaClient,
} from '../../services/store';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { stack } from '../support/stack';

/** An org, user and token with `creditMicros` credited through the ledger. */
async function fundedAccount(prisma: PrismaClient, slug: string, creditMicros = 10_000_000): Promise<SeededAccount> {
  const account = await seedAccount(prisma, { slug, scopes: ['run'] });
  await new LedgerRepository(prisma).credit(account.orgId, creditMicros, 'test funds');
  return account;
}

/** Step rows for a DAG given as `node -> its executable predecessors`. */
function stepsOf(dag: Record<string, string[]>): NewRun['steps'] {
  return Object.entries(dag).map(([nodeId, deps]) => ({ nodeId, pendingDeps: deps.length }));
}

/** The dependents of `nodeId` in such a DAG, as the engine's plan gives them. */
function dependentsOf(dag: Record<string, string[]>, nodeId: string): string[] {
  return Object.entries(dag)
    .filter(([, deps]) => deps.includes(nodeId))
    .map(([id]) => id);
}

/** Creates a run of `dag` with cap `capMicros` and marks it running; returns its id. */
async function startRun(runs: RunRepository, account: SeededAccount, dag: Record<string, string[]>, capMicros: number): Promise<string> {
  const runId = await runs.createRun({
    orgId: account.orgId,
    userId: account.userId,
    tokenId: account.tokenId,
    definition: { version: 2, nodes: Object.keys(dag) },
    inputs: {},
    capMicros,
    steps: stepsOf(dag),
  });
  if (!(await runs.markRunning(runId))) throw new Error(`run ${runId} did not start`);
  return runId;
}

interface RunMoneyRow {
  id: string;
  cap: bigint;
  spent: bigint;
  reserved: bigint;
  step_cost: bigint;
  step_reserved: bigint;
  stray_reservations: bigint;
  charged: bigint;
}

/** Every violated money invariant in the database, as readable lines (empty when all hold). */
async function moneyViolations(prisma: PrismaClient): Promise<string[]> {
  const runs = await prisma.$queryRaw<RunMoneyRow[]>`
    SELECT r.id, r.cap_micros AS cap, r.spent_micros AS spent, r.reserved_micros AS reserved,
           COALESCE(sum(s.cost_micros), 0)::bigint AS step_cost, COALESCE(sum(s.reserved_micros), 0)::bigint AS step_reserved,
           count(s.id) FILTER (WHERE s.reserved_micros <> 0 AND s.status <> 'running') AS stray_reservations,
           (SELECT COALESCE(-sum(l.amount_micros), 0) FROM ledger_entries l WHERE l.run_id = r.id AND l.kind = 'run_charge')::bigint AS charged
    FROM runs r LEFT JOIN steps s ON s.run_id = r.id
    GROUP BY r.id`;
  const problems: string[] = [];
  for (const r of runs) {
    if (r.reserved < 0n) problems.push(`run ${r.id}: reserved ${r.reserved} < 0`);
    if (r.spent + r.reserved > r.cap) problems.push(`run ${r.id}: spent ${r.spent} + reserved ${r.reserved} > cap ${r.cap}`);
    if (r.spent !== r.step_cost) problems.push(`run ${r.id}: spent ${r.spent} != sum of step costs ${r.step_cost}`);
    if (r.reserved !== r.step_reserved) problems.push(`run ${r.id}: reserved ${r.reserved} != sum of step reservations ${r.step_reserved}`);
    if (r.stray_reservations !== 0n) problems.push(`run ${r.id}: ${r.stray_reservations} steps hold money without running`);
    if (r.charged !== r.spent) problems.push(`run ${r.id}: ledger charged ${r.charged} != spent ${r.spent}`);
  }
  const orgs = await prisma.$queryRaw<{ id: string; balance: bigint; total: bigint }[]>`
    SELECT o.id, o.balance_micros AS balance,
           (SELECT COALESCE(sum(l.amount_micros), 0) FROM ledger_entries l WHERE l.org_id = o.id)::bigint AS total
    FROM organizations o`;
  for (const o of orgs) {
    if (o.balance !== o.total) problems.push(`org ${o.id}: balance ${o.balance} != ledger sum ${o.total}`);
  }
  return problems;
}

const DIAMOND = { a: [], b: ['a'], c: ['a'], d: ['b', 'c'] };

describe('run store', () => {
  let db: TestDatabase;
  let database: Database;
  let prisma: PrismaClient;
  let runs: RunRepository;
  let steps: StepRepository;
  let recovery: RunRecoveryRepository;
  let ledger: LedgerRepository;
  const warnings: Record<string, unknown>[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres, stack().templateDatabase);
    database = createDatabase(db.url, { poolSize: 20 });
    prisma = database.prisma;
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) warnings.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    runs = new RunRepository(database);
    steps = new StepRepository(database, { logger: pino({ level: 'warn' }, sink) });
    recovery = new RunRecoveryRepository(prisma);
    ledger = new LedgerRepository(prisma);
  });

  afterEach(async () => {
    // The invariants hold after every test, whatever it did.
    await expect(moneyViolations(prisma)).resolves.toEqual([]);
  });

  afterAll(async () => {
    await database?.close();
    await db?.drop();
  });

  /** Reserves `nodeId` and fails the test if refused. */
  async function reserveOk(runId: string, nodeId: string, estimateMicros: number) {
    const reserved = await steps.reserve({ runId, nodeId, estimateMicros });
    if (!reserved.ok) throw new Error(`reserve ${nodeId} refused: ${reserved.reason}`);
    return reserved;
  }

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
