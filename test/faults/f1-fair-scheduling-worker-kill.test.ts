import { setTimeout as sleep } from 'node:timers/promises';
import { AccountAdmin } from '../../services/store/account-admin';
import { seedAccount } from '../support/fixtures';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { followRun, type ClientRecord } from './support/run-client';
import { startTopology, type Topology } from './support/topology';
import { runBody } from './support/worker-faults';

/**
 * F1 (docs/scheduling.md): fair scheduling while a worker is SIGKILLed. Organization A
 * floods runs of one provider step (~300 ms) under ORG_STEP_CONCURRENCY=4; a worker dies holding
 * some of A's jobs, so their releases never come (BullMQ redelivers the jobs; slots of jobs that
 * are gone are pruned, parked organizations looked at again every FAIR_RECONCILE_MS). Then
 * organization B posts runs. Every run of both must complete, A must never run more than its
 * limit at once (from the steps' times in Postgres), and B's steps must start behind at most
 * the window, not behind A's backlog.
 */

const SCENARIO = 'F1';
const FLOOD = scale(40, 200);
const LATE = scale(4, 20);
const LIMIT = 4;
const WINDOW = 8;

let topo: Topology;
let other: { orgId: string; token: string };

beforeAll(async () => {
  const env = { ORG_STEP_CONCURRENCY: String(LIMIT), FAIR_DISPATCH_WINDOW: String(WINDOW), FAIR_RECONCILE_MS: '500' };
  topo = await startTopology({ env });
  topo.provider.behave({ delayMs: 300, chunkDelayMs: 0 });
  const seeded = await seedAccount(topo.database.prisma, { slug: 'faults-other', scopes: ['read', 'run'] });
  await new AccountAdmin(topo.database.prisma).addCredit(seeded.orgSlug, '100', 'fault suite');
  other = seeded;
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

/** The most of `intervals` that overlap at one instant. */
function mostAtOnce(intervals: readonly { from: number; to: number }[]): number {
  const edges = intervals.flatMap(({ from, to }) => [
    { at: from, d: 1 },
    { at: to, d: -1 },
  ]);
  // An end before a start at the same instant: a slot handed on is not two at once.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const { d } of edges) most = Math.max(most, (now += d));
  return most;
}

it(`${FLOOD} runs of one organization at ORG_STEP_CONCURRENCY=${LIMIT}, a worker SIGKILLed holding its jobs, then ${LATE} of another: all complete, the limit holds, the newcomer is not starved`, async () => {
  const follow = (token: string, tag: string, i: number) => followRun(topo.url, token, runBody('chat', `${tag}-${i}`, i), { deadlineMs: 240_000 });
  const flood = Array.from({ length: FLOOD }, (_, i) => follow(topo.account.token, 'f1a', i));
  // The kill lands while A's steps run on both workers.
  const until = Date.now() + 60_000;
  const running = async () => (await topo.database.pool.query(`SELECT count(*)::int AS n FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.org_id = $1::uuid AND s.status = 'running'`, [topo.account.orgId])).rows[0].n as number;
  while ((await running()) < 2 && Date.now() < until) await sleep(50);
  topo.workers[0]!.signal('SIGKILL');
  await topo.workers[0]!.exited();
  const lateAt = new Date();
  const late = Array.from({ length: LATE }, (_, i) => follow(other.token, 'f1b', i));
  await sleep(500);
  await topo.workers[0]!.start();
  const clients: ClientRecord[] = await Promise.all([...flood, ...late]);

  const runIds = clients.map((c) => c.runId).filter((id): id is string => id !== undefined);
  const { rows: runs } = await topo.database.pool.query<{ org_id: string; status: string }>(`SELECT org_id, status FROM runs WHERE id = ANY($1::uuid[])`, [runIds]);
  const { rows: steps } = await topo.database.pool.query<{ org_id: string; started_at: Date; finished_at: Date }>(
    `SELECT r.org_id, s.started_at, s.finished_at FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.run_id = ANY($1::uuid[]) AND s.started_at IS NOT NULL AND s.finished_at IS NOT NULL`,
    [runIds],
  );
  const ofA = steps.filter((s) => s.org_id === topo.account.orgId);
  const ofB = steps.filter((s) => s.org_id === other.orgId);
  const aAtOnce = mostAtOnce(ofA.map((s) => ({ from: s.started_at.getTime(), to: s.finished_at.getTime() })));
  const firstB = Math.min(...ofB.map((s) => s.started_at.getTime()));
  const aAhead = ofA.filter((s) => s.started_at.getTime() > lateAt.getTime() && s.started_at.getTime() < firstB).length;
  const aLeft = ofA.filter((s) => s.started_at.getTime() >= firstB).length;
  const incomplete = runs.filter((r) => r.status !== 'completed').length;
  // Each organization's runs checked with its own token (the checker reads records and logs over the API).
  const floodClients = clients.slice(0, FLOOD);
  const lateClients = clients.slice(FLOOD);
  const idsOf = (records: ClientRecord[]) => records.map((c) => c.runId).filter((id): id is string => id !== undefined);
  const checks = [
    await checkInvariants({ databaseUrl: topo.databaseUrl, apiUrl: topo.url, token: topo.account.token, clients: floodClients, runIds: idsOf(floodClients), settleMs: 20_000 }),
    await checkInvariants({ databaseUrl: topo.databaseUrl, apiUrl: topo.url, token: other.token, clients: lateClients, runIds: idsOf(lateClients), settleMs: 5_000 }),
  ];
  const check = { violations: checks.flatMap((c) => c.violations) };
  console.log(`${SCENARIO}:`, { acknowledged: runIds.length, incomplete, aAtOnce, aAhead, aLeft, violations: check.violations.slice(0, 5) });

  figure(SCENARIO, `runs of one organization (limit ${LIMIT}) and of another, a worker SIGKILLed holding the first's jobs`, runIds.length, undefined, 'runs');
  expectFigure(SCENARIO, 'runs acknowledged', runIds.length, { equals: FLOOD + LATE }, 'runs');
  expectFigure(SCENARIO, 'runs not completed', incomplete, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, "the flooding organization's steps running at once, at most", aAtOnce, { max: LIMIT }, 'steps');
  expectFigure(SCENARIO, "the flood's steps started after the other organization posted, before its first started", aAhead, { max: WINDOW + 1 }, 'steps');
  figure(SCENARIO, "the flood's steps that started after the other organization's first", aLeft, undefined, 'steps');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, 600_000);
