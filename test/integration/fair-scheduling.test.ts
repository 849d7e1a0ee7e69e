import type { ServiceRuntime } from '../../services/composition';
import { eventually } from '../support/eventually';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { sseMessages } from '../support/sse';
import { pauseChain, pauseNode } from '../support/test-nodes';

/**
 * Fair scheduling through the whole service (docs/scheduling.md): one organization posts a flood
 * of runs over HTTP, another posts one run; the other's step starts behind at most the window,
 * the workers' jobs and one turn of the ring. The API runs without a worker until both have
 * posted, so the whole flood is queued ahead of the newcomer however fast the machine is; then a
 * worker process's runtime starts. The order is read from Postgres (`steps.started_at`: one
 * clock), never from timings.
 */

const WINDOW = 2;
const CONCURRENCY = 2;
const FLOOD = 30;

let service: TestService;
let other: SeededAccount;

beforeAll(async () => {
  // ROLE=api: no step runs until the test starts a worker (`service.extra`).
  service = await startTestService({
    nodes: [pauseNode],
    env: { ROLE: 'api', WORKER_CONCURRENCY: String(CONCURRENCY), FAIR_DISPATCH_WINDOW: String(WINDOW), ORG_STEP_CONCURRENCY: '0', ORG_LIMITS_SYNC_SECONDS: '1' },
  });
  other = await seedAccount(service.prisma, { slug: 'other-org', scopes: ['read', 'run'], balanceMicros: 100_000_000 });
}, 120_000);
afterAll(async () => service?.close());

/** Posts a run and answers its id once `run.started` arrives. */
async function post(token: string): Promise<string> {
  const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify({ workflow: pauseChain(1, 100) }) });
  expect(res.status).toBe(200);
  let runId = '';
  for await (const message of sseMessages(res.body!)) {
    if (message.data === '[DONE]') break;
    const event = JSON.parse(message.data) as { type: string; runId?: string };
    if (event.type === 'run.started') runId = event.runId!;
    if (runId) break;
  }
  await res.body!.cancel().catch(() => undefined);
  return runId;
}

let worker: Promise<ServiceRuntime> | undefined;
/** Starts the worker (a runtime of its own, ROLE=worker, over the same database and Redis) once. */
const startWorker = () => (worker ??= service.extra({ ROLE: 'worker' }));

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
  // What each organization is told of its place (GET /v1/queue) while the flood waits: the
  // window's jobs are in BullMQ's list, the rest wait their turn.
  expect(await queueOf(service.account.token)).toEqual({ fairScheduling: true, waitingSteps: FLOOD - WINDOW, dispatchedSteps: WINDOW, limit: null, limitIsOwn: false, organizationsWaiting: 1, providerLimits: [] });
  expect(await queueOf(other.token)).toEqual({ fairScheduling: true, waitingSteps: 0, dispatchedSteps: 0, limit: null, limitIsOwn: false, organizationsWaiting: 1, providerLimits: [] });
  const late = await post(other.token);
  expect(await queueOf(other.token)).toMatchObject({ waitingSteps: 1, dispatchedSteps: 0, organizationsWaiting: 2 });

  // Now the workers: the flood's steps and the newcomer's, all queued, in the order fair scheduling gives.
  await startWorker();
  const runs = [...flood, late];
  await eventually(async () => (await service.database.pool.query(`SELECT 1 FROM runs WHERE id = ANY($1::uuid[]) AND status = 'completed'`, [runs])).rowCount === runs.length, { what: 'every run completed', timeoutMs: 90_000 });
  const { rows } = await service.database.pool.query<{ started_at: Date; run_id: string }>('SELECT run_id, started_at FROM steps WHERE run_id = ANY($1::uuid[])', [runs]);
  expect(rows).toHaveLength(runs.length);
  const lateStarted = rows.find((row) => row.run_id === late)!.started_at;
  const ahead = rows.filter((row) => row.run_id !== late && row.started_at <= lateStarted).length;
  console.log(`fair scheduling: the other organization's step started after ${ahead} of the flood's ${FLOOD} steps, all queued before it`);
  // The window, what the workers held, and one turn of the ring (the flood's organization first);
  // one FIFO list would have started all 30 first.
  expect(ahead).toBeLessThanOrEqual(WINDOW + CONCURRENCY + 1);
  // Nothing is left waiting its turn.
  expect(await service.runtime.queue.counts()).toMatchObject({ waiting: 0, held: 0 });
}, 120_000);

it("applies an organization's own limit set in Postgres (admin org limit), and says so", async () => {
  // The workers copy the limits into Redis.
  await startWorker();
  await service.prisma.organization.update({ where: { id: other.orgId }, data: { stepConcurrency: 3 } });
  await eventually(async () => (await queueOf(other.token)).limitIsOwn, { what: 'the limit copied into Redis by the worker', timeoutMs: 20_000 });
  expect(await queueOf(other.token)).toMatchObject({ limit: 3, limitIsOwn: true });
  expect(await queueOf(service.account.token)).toMatchObject({ limit: null, limitIsOwn: false });
  await service.prisma.organization.update({ where: { id: other.orgId }, data: { stepConcurrency: null } });
  await eventually(async () => !(await queueOf(other.token)).limitIsOwn, { what: 'the limit cleared in Redis', timeoutMs: 20_000 });
}, 60_000);
