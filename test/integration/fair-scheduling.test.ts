import { eventually } from '../support/eventually';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { sseMessages } from '../support/sse';
import { pauseChain, pauseNode } from '../support/test-nodes';

/**
 * Fair scheduling through the whole service (docs/scheduling.md): one organization posts a flood
 * of runs over HTTP, another posts one run; the other's step starts behind at most the window,
 * the workers' jobs and one turn of the ring, while most of the flood still waits. The order is
 * read from Postgres (`steps.started_at`, `runs.created_at`: one clock), never from timings.
 */

const WINDOW = 2;
const CONCURRENCY = 2;
const FLOOD = 30;

let service: TestService;
let other: SeededAccount;

beforeAll(async () => {
  service = await startTestService({
    nodes: [pauseNode],
    env: { WORKER_CONCURRENCY: String(CONCURRENCY), FAIR_DISPATCH_WINDOW: String(WINDOW), ORG_STEP_CONCURRENCY: '0', ORG_LIMITS_SYNC_SECONDS: '1' },
  });
  other = await seedAccount(service.prisma, { slug: 'other-org', scopes: ['read', 'run'], balanceMicros: 100_000_000 });
}, 120_000);
afterAll(async () => service?.close());

/** Posts a run and answers its id once `run.started` arrives; `follow`: reads the stream to its end first. */
async function post(token: string, follow = false): Promise<string> {
  const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify({ workflow: pauseChain(1, 100) }) });
  expect(res.status).toBe(200);
  let runId = '';
  for await (const message of sseMessages(res.body!)) {
    if (message.data === '[DONE]') break;
    const event = JSON.parse(message.data) as { type: string; runId?: string };
    if (event.type === 'run.started') runId = event.runId!;
    if (runId && !follow) break;
  }
  await res.body!.cancel().catch(() => undefined);
  return runId;
}

interface QueueStatus {
  fairScheduling: boolean;
  waitingSteps: number | null;
  dispatchedSteps: number | null;
  limit: number | null;
  limitIsOwn: boolean;
  organizationsWaiting: number | null;
}

async function queueOf(token: string): Promise<QueueStatus> {
  const res = await fetch(`${service.url}/v1/queue`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  return (await res.json()) as QueueStatus;
}

it("starts another organization's run behind at most the window, not behind a flood of runs", async () => {
  const flood: string[] = [];
  for (let i = 0; i < FLOOD; i++) flood.push(await post(service.account.token));
  // What each organization is told of its place (GET /v1/queue) while the flood waits.
  const flooding = await queueOf(service.account.token);
  expect(flooding).toMatchObject({ fairScheduling: true, limit: null, limitIsOwn: false });
  expect(flooding.waitingSteps).toBeGreaterThan(FLOOD / 2);
  expect(flooding.dispatchedSteps).toBeGreaterThanOrEqual(1);
  expect(flooding.dispatchedSteps).toBeLessThanOrEqual(WINDOW + CONCURRENCY);
  expect(flooding.organizationsWaiting).toBe(1);
  expect(await queueOf(other.token)).toEqual({ fairScheduling: true, waitingSteps: 0, dispatchedSteps: 0, limit: null, limitIsOwn: false, organizationsWaiting: 1 });
  const late = await post(other.token, true);
  const { rows } = await service.database.pool.query<{ started_at: Date | null; run_id: string }>('SELECT run_id, started_at FROM steps WHERE run_id = ANY($1::uuid[])', [[...flood, late]]);
  const [{ created_at: lateCreated }] = (await service.database.pool.query<{ created_at: Date }>('SELECT created_at FROM runs WHERE id = $1', [late])).rows as [{ created_at: Date }];
  const lateStarted = rows.find((row) => row.run_id === late)!.started_at!;
  const floodStarts = rows.filter((row) => row.run_id !== late).map((row) => row.started_at);
  const ahead = floodStarts.filter((at) => at !== null && at > lateCreated && at <= lateStarted).length;
  const behind = floodStarts.filter((at) => at === null || at > lateStarted).length;
  console.log(`fair scheduling: the other organization's step started after ${ahead} of the flood's steps started since it was posted; ${behind} of ${FLOOD} were still to start`);
  // The window, what the workers held, and one turn of the ring (the flood's organization first).
  expect(ahead).toBeLessThanOrEqual(WINDOW + CONCURRENCY + 1);
  // Most of the flood was still waiting: the run did not simply come last in a short line.
  expect(behind).toBeGreaterThan(FLOOD / 2);
  // Every run of the flood finishes, and nothing is left waiting its turn.
  await eventually(async () => (await service.database.pool.query(`SELECT 1 FROM runs WHERE id = ANY($1::uuid[]) AND status = 'completed'`, [flood])).rowCount === FLOOD, { what: 'every run of the flood completed', timeoutMs: 60_000 });
  expect(await service.runtime.queue.counts()).toMatchObject({ waiting: 0, held: 0 });
}, 120_000);

it("applies an organization's own limit set in Postgres (admin org limit), and says so", async () => {
  await service.prisma.organization.update({ where: { id: other.orgId }, data: { stepConcurrency: 3 } });
  await eventually(async () => (await queueOf(other.token)).limitIsOwn, { what: 'the limit copied into Redis by the worker', timeoutMs: 20_000 });
  expect(await queueOf(other.token)).toMatchObject({ limit: 3, limitIsOwn: true });
  expect(await queueOf(service.account.token)).toMatchObject({ limit: null, limitIsOwn: false });
  await service.prisma.organization.update({ where: { id: other.orgId }, data: { stepConcurrency: null } });
  await eventually(async () => !(await queueOf(other.token)).limitIsOwn, { what: 'the limit cleared in Redis', timeoutMs: 20_000 });
}, 60_000);
