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
import { createTestDatabase, type TestDatabase } from './database';
import { seedAccount, type SeededAccount } from './fixtures';
import { stack } from './stack';

/**
 * The run store's test bench (run-store*.test.ts): a database of the test file's own, the
 * repositories over it, and the money invariants checked after every test.
 */

/** An org, user and token with `creditMicros` credited through the ledger. */
export async function fundedAccount(prisma: PrismaClient, slug: string, creditMicros = 10_000_000): Promise<SeededAccount> {
  const account = await seedAccount(prisma, { slug, scopes: ['run'] });
  await new LedgerRepository(prisma).credit(account.orgId, creditMicros, 'test funds');
  return account;
}

/** Step rows for a DAG given as `node -> its executable predecessors`. */
export function stepsOf(dag: Record<string, string[]>): NewRun['steps'] {
  return Object.entries(dag).map(([nodeId, deps]) => ({ nodeId, pendingDeps: deps.length }));
}

/** The dependents of `nodeId` in such a DAG, as the engine's plan gives them. */
export function dependentsOf(dag: Record<string, string[]>, nodeId: string): string[] {
  return Object.entries(dag)
    .filter(([, deps]) => deps.includes(nodeId))
    .map(([id]) => id);
}

/** What `createRun` stores for a run of `dag` of `account` with cap `capMicros`. */
function runOf(account: SeededAccount, dag: Record<string, string[]>, capMicros: number): NewRun {
  return {
    orgId: account.orgId,
    userId: account.userId,
    tokenId: account.tokenId,
    definition: { version: 2, nodes: Object.keys(dag) },
    inputs: {},
    capMicros,
    steps: stepsOf(dag),
  };
}

/** Creates a run of `dag` with cap `capMicros` and marks it running; returns its id. */
export async function startRun(runs: RunRepository, account: SeededAccount, dag: Record<string, string[]>, capMicros: number): Promise<string> {
  const runId = await runs.createRun(runOf(account, dag, capMicros));
  if (!(await runs.markRunning(runId))) throw new Error(`run ${runId} did not start`);
  return runId;
}

/**
 * Creates a run of `dag` stored running and holding up to `capMicros` of its organization's
 * balance, as POST /v1/runs admits one (the runs of `startRun` hold nothing); returns its id.
 */
export async function startHeldRun(runs: RunRepository, account: SeededAccount, dag: Record<string, string[]>, capMicros: number): Promise<string> {
  return runs.createRun({ ...runOf(account, dag, capMicros), requireCredit: true, start: true });
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
export async function moneyViolations(prisma: PrismaClient): Promise<string[]> {
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
  // The balance net of unfinished runs' deferred charges (docs/money.md, Deferred settlement), which the row counts as held.
  const orgs = await prisma.$queryRaw<{ id: string; balance: bigint; total: bigint; held: bigint; runs_held: bigint }[]>`
    SELECT o.id, svc_org_balance(o.id) AS balance, o.held_micros AS held,
           (SELECT COALESCE(sum(l.amount_micros), 0) FROM ledger_entries l WHERE l.org_id = o.id)::bigint AS total,
           (SELECT COALESCE(sum(r.held_micros + r.charged_micros - r.settled_micros), 0) FROM runs r WHERE r.org_id = o.id)::bigint AS runs_held
    FROM organizations o`;
  for (const o of orgs) {
    if (o.balance !== o.total) problems.push(`org ${o.id}: balance ${o.balance} != ledger sum ${o.total}`);
    if (o.held !== o.runs_held) problems.push(`org ${o.id}: holds ${o.held} != its runs' holds and deferred charges ${o.runs_held}`);
  }
  return problems;
}

export const DIAMOND = { a: [], b: ['a'], c: ['a'], d: ['b', 'c'] };

/** The repositories of one test file, and the warnings StepRepository logged. */
export interface RunStoreBench {
  prisma: PrismaClient;
  /** The pool the repositories run on (Database.pool). */
  pool: Database['pool'];
  runs: RunRepository;
  steps: StepRepository;
  recovery: RunRecoveryRepository;
  ledger: LedgerRepository;
  warnings: Record<string, unknown>[];
}

/**
 * Registers the hooks of a run store test file (call it first in the `describe`): a database
 * copied from the template, the repositories, the money invariants after each test. `get()` is
 * valid from the file's next `beforeAll` on.
 */
export function useRunStore(): { get(): RunStoreBench } {
  let db: TestDatabase | undefined;
  let database: Database | undefined;
  let bench: RunStoreBench | undefined;

  beforeAll(async () => {
    db = await createTestDatabase(stack().postgres, stack().templateDatabase);
    database = createDatabase(db.url, { poolSize: 20 });
    const warnings: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) warnings.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    bench = {
      prisma: database.prisma,
      pool: database.pool,
      runs: new RunRepository(database),
      steps: new StepRepository(database, { logger: pino({ level: 'warn' }, sink) }),
      recovery: new RunRecoveryRepository(database.pool),
      ledger: new LedgerRepository(database.prisma),
      warnings,
    };
  });

  afterEach(async () => {
    // The invariants hold after every test, whatever it did.
    await expect(moneyViolations(bench!.prisma)).resolves.toEqual([]);
  });

  afterAll(async () => {
    await database?.close();
    await db?.drop();
  });

  return {
    get() {
      if (!bench) throw new Error('useRunStore().get() called before its beforeAll ran');
      return bench;
    },
  };
}

/** Reserves `nodeId` and fails the test if refused. */
export async function reserveOk(steps: StepRepository, runId: string, nodeId: string, estimateMicros: number) {
  const reserved = await steps.reserve({ runId, nodeId, estimateMicros });
  if (!reserved.ok) throw new Error(`reserve ${nodeId} refused: ${reserved.reason}`);
  return reserved;
}
