import { setTimeout as sleep } from 'node:timers/promises';
import { adder, jsonCall } from '../support/json-api';
import { eventually } from '../support/eventually';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { restartWorker, type ServiceProcess } from './support/service-process';
import { startTopology, type Topology } from './support/topology';

/**
 * K1: a schedule ticking every 2 s across a worker SIGKILLed and started again, every worker down
 * at once (ticks missed, then caught up), and a Redis restart. Then: every tick from the first to
 * the last is accounted for exactly once (started, failed, or inside one skipped range; no tick
 * twice, none missing), each started tick has exactly one run and every run of the schedule
 * belongs to exactly one tick, no tick is left half begun, every run ended, and the checker finds
 * nothing wrong with the runs.
 */

const SCENARIO = 'K1';
const EVERY_S = 2;
/** Seconds of ticking between the faults. */
const SETTLE_S = scale(6, 20);

let topo: Topology;
beforeAll(async () => {
  // Ticks every 2 s need a minimum interval under a minute, at the API (the check) and the workers.
  topo = await startTopology({ apis: 1, env: { SCHEDULE_MIN_INTERVAL_SECONDS: '1', SCHEDULE_SWEEP_MS: '200' } });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

async function kill(process: ServiceProcess): Promise<void> {
  process.signal('SIGKILL');
  await process.exited();
}

it(`K1: a schedule every ${EVERY_S} s across worker SIGKILLs, all workers down, and a Redis restart fires each tick exactly once`, async () => {
  const call = (method: string, path: string, body?: unknown) => jsonCall(topo.url, method, path, body, topo.account.token);
  const draft = await call('POST', '/editor/workflows', { name: 'k1', definition: adder(20, 22) });
  expect(draft.status).toBe(201);
  expect((await call('POST', `/editor/workflows/${draft.body.id}/publish`, { slug: 'k1' })).status).toBe(201);
  const created = await call('POST', '/v1/schedules', { workflowRef: `${topo.account.orgSlug}/k1@latest`, cron: `*/${EVERY_S} * * * * *`, catchUpSeconds: 3600 });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const startedAt = Date.now();

  await sleep(SETTLE_S * 1000);
  // One worker killed and started again: the other goes on ticking meanwhile.
  await kill(topo.workers[0]!);
  await restartWorker(topo.workers[0]!);
  await sleep(SETTLE_S * 1000);
  // Every worker down for several ticks: they are missed, then the latest is run late.
  await Promise.all(topo.workers.map(kill));
  await sleep(EVERY_S * 3_000);
  await Promise.all(topo.workers.map(restartWorker));
  await sleep(SETTLE_S * 1000);
  // Redis restarted (graceful: AOF flushed and reloaded) while ticking.
  await topo.servers.restartRedis();
  await sleep(SETTLE_S * 1000);
  expect((await call('POST', `/v1/schedules/${id}/pause`)).status).toBe(200);
  const seconds = Math.round((Date.now() - startedAt) / 1000);

  const { pool } = topo.database;
  // No tick left half begun (a worker mid-tick when the schedule was paused finishes it first).
  await eventually(async () => (await pool.query(`SELECT 1 FROM schedule_ticks WHERE schedule_id = $1::uuid AND status = 'starting'`, [id])).rowCount === 0 || null, {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'no tick still starting',
  });
  const { rows: ticks } = await pool.query<{ tick_at: Date; status: string; run_id: string | null; skipped_through: Date | null; skipped_count: number }>(
    `SELECT tick_at, status, run_id, skipped_through, skipped_count FROM schedule_ticks WHERE schedule_id = $1::uuid ORDER BY tick_at`,
    [id],
  );
  const { rows: runs } = await pool.query<{ id: string }>(`SELECT id FROM runs WHERE schedule_id = $1::uuid`, [id]);

  // Every tick from the first to the last, accounted for once.
  const covered = new Map<number, number>();
  const mark = (at: number) => covered.set(at, (covered.get(at) ?? 0) + 1);
  for (const tick of ticks) {
    if (tick.status !== 'skipped') mark(tick.tick_at.getTime());
    else for (let at = tick.tick_at.getTime(); at <= tick.skipped_through!.getTime(); at += EVERY_S * 1000) mark(at);
  }
  const first = ticks[0]!.tick_at.getTime();
  const last = Math.max(...ticks.map((t) => (t.skipped_through ?? t.tick_at).getTime()));
  let missing = 0;
  for (let at = first; at <= last; at += EVERY_S * 1000) if (!covered.has(at)) missing += 1;
  const twice = [...covered.values()].filter((n) => n > 1).length;
  const skippedCounted = ticks.filter((t) => t.status === 'skipped').reduce((n, t) => n + t.skipped_count, 0);
  const skippedSpanned = ticks.filter((t) => t.status === 'skipped').reduce((n, t) => n + ((t.skipped_through!.getTime() - t.tick_at.getTime()) / (EVERY_S * 1000) + 1), 0);

  const started = ticks.filter((t) => t.status === 'started');
  const tickRuns = new Set(started.map((t) => t.run_id));
  const runIds = runs.map((r) => r.id);
  const runsWithoutTick = runIds.filter((runId) => !tickRuns.has(runId)).length;
  const ticksWithoutRun = started.filter((t) => t.run_id === null || !runIds.includes(t.run_id)).length;
  const check = await checkInvariants({ pool, apiUrl: topo.url, token: topo.account.token, clients: [], runIds, settleMs: 60_000 });
  const { rows: ended } = await pool.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM runs WHERE schedule_id = $1::uuid GROUP BY status`, [id]);
  console.log(`${SCENARIO}:`, { seconds, ticks: ticks.length, started: started.length, skipped: skippedCounted, failed: ticks.filter((t) => t.status === 'failed').length, runs: runIds.length, ended, violations: check.violations.slice(0, 5) });

  figure(SCENARIO, 'seconds the schedule ticked', seconds, undefined, 's');
  figure(SCENARIO, 'ticks started', started.length, undefined, 'ticks');
  figure(SCENARIO, 'ticks skipped (missed while every worker was down)', skippedCounted, undefined, 'ticks');
  expectFigure(SCENARIO, 'ticks started', started.length, { min: Math.floor((4 * SETTLE_S) / EVERY_S / 2) }, 'ticks');
  expectFigure(SCENARIO, 'ticks missing between the first and the last', missing, { equals: 0 }, 'ticks');
  expectFigure(SCENARIO, 'ticks accounted for twice', twice, { equals: 0 }, 'ticks');
  expectFigure(SCENARIO, 'skipped ranges whose count is not their span', skippedCounted - skippedSpanned, { equals: 0 }, 'ticks');
  expectFigure(SCENARIO, 'ticks missed while every worker was down', skippedCounted, { min: 1 }, 'ticks');
  expectFigure(SCENARIO, 'runs of the schedule without their tick', runsWithoutTick, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'started ticks without their run', ticksWithoutRun, { equals: 0 }, 'ticks');
  expectFigure(SCENARIO, 'runs not ended', ended.filter((e) => !['completed', 'failed', 'cancelled'].includes(e.status)).reduce((n, e) => n + Number(e.n), 0), { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, scale(300_000, 600_000));
