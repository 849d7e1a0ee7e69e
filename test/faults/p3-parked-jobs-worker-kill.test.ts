import { eventually } from '../support/eventually';
import { checkInvariants } from './support/checker';
import { FAL_APP, FAL_PRICE_MICROS, falEnv, startFalFake, type FalFake, type FalJob } from './support/fal-fake';
import { expectFigure, figure, scale } from './support/figures';
import { followRun } from './support/run-client';
import { startTopology, type Topology } from './support/topology';
import { doubleCommitsInSql, LOCAL_PRICES, repeatedCompletionsSeen, runningSteps, takenOver, type FlowClient } from './support/worker-faults';

/**
 * P3: a worker holding many parked provider jobs (fal queue requests it submitted, recorded with
 * their attempts, and now polls while fal holds them IN_PROGRESS) is SIGKILLed while a second
 * worker runs, under a short STEP_LOCK_MS so the dead worker's steps are redelivered promptly.
 *
 * worker-2 is stopped while the runs start, so every job is the victim's; once every job is
 * submitted, recorded and polled, worker-2 starts and the victim is killed. The survivor takes
 * each step over and resumes the recorded job: the fal fake sees each job's status polled again
 * on a connection opened after the kill (the victim's died with it), and no job submitted twice.
 * Then the fake completes the jobs: every run completes, no step commits twice, each step costs
 * one job's price (the lost attempt is not charged its worst case on top), the ledger charged
 * steps × price, fal billed as much, and the checker finds nothing.
 */

const SCENARIO = 'P3';
const PARKED = scale(40, 500);
const LOCK_MS = 2000;
/** Polls of every parked job per second are PARKED / poll interval: kept to what two cores serve beside the rest. */
const POLL_MS = scale(500, 1000);

let fal: FalFake;
let topo: Topology;
beforeAll(async () => {
  fal = await startFalFake();
  const env = {
    ...falEnv(fal.url),
    STEP_LOCK_MS: String(LOCK_MS),
    PROVIDER_POLL_MS: String(POLL_MS),
    // Fair scheduling would cap the organization's steps below what is parked here.
    ORG_STEP_CONCURRENCY: '0',
  };
  // One API: the fault is a worker's. Each run reserves its spending cap (0.50 USD by default) while it lasts.
  topo = await startTopology({ apis: 1, env, creditUsd: String(Math.max(100, PARKED)) });
}, 300_000);
afterAll(async () => {
  fal?.release();
  await topo?.close();
  await fal?.close();
}, 60_000);

/** One fal-image step; the prompt carries the run's tag, so the fake's jobs are the run's. */
function falRunBody(tag: string): { workflow: unknown } {
  return {
    workflow: {
      version: 2,
      nodes: [
        { id: 'draw', uses: 'fal-image', inputs: { prompt: `tag:${tag} a blue square`, app: FAL_APP } },
        { id: 'out', uses: 'output', inputs: { value: '${draw.image}' } },
      ],
    },
  };
}

/** The first poll of `job` sent on a connection opened after `since`: by a process alive after the kill (undefined: none yet). */
const firstPollAfter = (job: FalJob, since: number): number | undefined => job.polls.find((p) => p.connectedAt > since && p.at > since)?.at;

it(`P3: a worker SIGKILLed with ${PARKED} parked fal jobs: the survivor resumes each job (submitted once), every run completes once, charged one job each`, async () => {
  const { pool } = topo.database;
  const [victim, other] = [topo.workers[0]!, topo.workers[1]!];
  const follow = (tag: string): Promise<FlowClient> =>
    followRun(topo.url, topo.account.token, falRunBody(tag), { deadlineMs: scale(240_000, 900_000), heartbeatMs: Number(topo.env.SSE_HEARTBEAT_MS) }).then((record) => ({ tag, shape: 'chat' as const, record }));

  await other.stop();
  const pending = Array.from({ length: PARKED }, (_, i) => follow(`p3-${i}`));
  // Parked: submitted, recorded with its attempt, and polled (the worker waits on it).
  await eventually(() => fal.jobs.length >= PARKED && fal.jobs.every((j) => j.polls.length > 0), { timeoutMs: scale(120_000, 400_000), intervalMs: 100, what: `${PARKED} fal jobs submitted and polled` });
  const recorded = async (): Promise<boolean> => {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM steps WHERE node_id = 'draw' AND status = 'running' AND provider_job IS NOT NULL`);
    return rows[0]!.n >= PARKED;
  };
  await eventually(recorded, { timeoutMs: 30_000, intervalMs: 100, what: `${PARKED} provider jobs recorded with their steps` });
  const parkedAtKill = fal.inProgress();
  const running = await runningSteps(pool);
  await other.start();

  const killAt = Date.now();
  await victim.kill();
  // The victim's connections died with it: a poll on a connection opened from here on is the survivor's.
  const killedAt = Date.now();
  const unresumed = (): FalJob[] => fal.jobs.filter((j) => firstPollAfter(j, killedAt) === undefined);
  await eventually(() => unresumed().length === 0, { timeoutMs: scale(60_000, 300_000), intervalMs: 50, what: 'every parked job polled again by the surviving worker' }).catch(() => undefined);
  const notResumed = unresumed();
  const resumedMs = notResumed.length === 0 ? Math.max(...fal.jobs.map((j) => firstPollAfter(j, killedAt)!)) - killAt : Number.NaN;
  fal.release();
  const clients = await Promise.all(pending);

  const runIds = clients.flatMap((c) => (c.record.runId ? [c.record.runId] : []));
  const check = await checkInvariants({ pool, apiUrl: topo.url, token: topo.account.token, clients: clients.map((c) => c.record), localPrices: LOCAL_PRICES, settleMs: 30_000 });
  const { rows: runs } = await pool.query<{ id: string; status: string }>(`SELECT id, status FROM runs WHERE id = ANY($1::uuid[])`, [runIds]);
  const status = new Map(runs.map((r) => [r.id, r.status]));
  const notCompleted = clients.filter((c) => c.record.gaveUp !== undefined || !c.record.runId || status.get(c.record.runId) !== 'completed');
  const doubles = [...(await doubleCommitsInSql(pool, runIds)), ...clients.flatMap((c) => repeatedCompletionsSeen(c.record)), ...check.violations.filter((v) => v.includes('committed twice'))];
  const submitsBeyondOne = clients.reduce((sum, c) => sum + Math.max(0, fal.jobsFor(c.tag).length - 1), 0);
  const unsubmitted = clients.filter((c) => fal.jobsFor(c.tag).length === 0).length;
  const cancelled = fal.jobs.filter((j) => j.cancels.length > 0).length;
  const resumedSeen = clients.filter((c) => c.record.messages.some((m) => m.data.includes('"step.progress"') && m.data.includes('resumed after a worker was lost'))).length;
  const taken = await takenOver(pool, running);
  const { rows: steps } = await pool.query<{ run_id: string; status: string; cost: string; attempt: number }>(`SELECT run_id, status, cost_micros::text AS cost, attempt FROM steps WHERE node_id = 'draw' AND run_id = ANY($1::uuid[])`, [runIds]);
  const mispriced = steps.filter((s) => Number(s.cost) !== FAL_PRICE_MICROS);
  const { rows: ledger } = await pool.query<{ charged: string }>(`SELECT COALESCE(-SUM(amount_micros), 0)::text AS charged FROM ledger_entries WHERE kind = 'run_charge' AND run_id = ANY($1::uuid[])`, [runIds]);
  const charged = Number(ledger[0]!.charged);
  const billed = fal.billedMicros();
  const undelivered = fal.undelivered().length;

  console.log(
    JSON.stringify({
      parkedAtKill,
      running: running.length,
      taken: taken.length,
      resumedMs,
      resumedSeen,
      submits: fal.jobs.length,
      submitsBeyondOne,
      unsubmitted,
      cancelled,
      charged,
      billed,
      undelivered,
      unknownRequests: fal.unknown.slice(0, 10),
      notResumed: notResumed.slice(0, 10).map((j) => [j.requestId, j.tag, j.polls.length]),
      mispriced: mispriced.slice(0, 10),
      counts: check.counts,
      notCompleted: notCompleted.slice(0, 10).map((c) => [c.tag, c.record.runId, c.record.gaveUp]),
      doubles: doubles.slice(0, 10),
      violations: check.violations.slice(0, 20),
    }),
  );
  expectFigure(SCENARIO, 'fal jobs parked (IN_PROGRESS, polled) at the victim when killed', parkedAtKill, { min: PARKED }, 'jobs');
  figure(SCENARIO, 'steps running when the victim was killed', running.length, undefined, 'steps');
  figure(SCENARIO, 'steps taken over by another attempt', taken.length, undefined, 'steps');
  figure(SCENARIO, `kill → every parked job polled again by the survivor (STEP_LOCK_MS ${LOCK_MS}, PROVIDER_POLL_MS ${POLL_MS})`, Number.isNaN(resumedMs) ? 'never' : resumedMs, undefined, 'ms');
  expectFigure(SCENARIO, 'parked jobs not polled again after the kill', notResumed.length, { equals: 0 }, 'jobs');
  expectFigure(SCENARIO, 'runs whose stream says their fal request was resumed', resumedSeen, { equals: PARKED }, 'runs');
  expectFigure(SCENARIO, 'fal-image steps completed', steps.filter((s) => s.status === 'completed').length, { equals: PARKED }, 'steps');
  expectFigure(SCENARIO, 'runs not completed', notCompleted.length, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'double commits', doubles.length, { max: 0 });
  expectFigure(SCENARIO, 'fal submits beyond one per step', submitsBeyondOne, { equals: 0 }, 'jobs');
  expectFigure(SCENARIO, 'steps whose job was never submitted', unsubmitted, { equals: 0 }, 'steps');
  expectFigure(SCENARIO, 'fal jobs cancelled', cancelled, { equals: 0 }, 'jobs');
  expectFigure(SCENARIO, 'fal jobs whose result was never read (abandoned: billed by fal, unseen here)', undelivered, { equals: 0 }, 'jobs');
  expectFigure(SCENARIO, `steps whose cost is not one job's price (${FAL_PRICE_MICROS} micro-USD)`, mispriced.length, { equals: 0 }, 'steps');
  expectFigure(SCENARIO, `ledger run charges (steps × ${FAL_PRICE_MICROS})`, charged, { equals: PARKED * FAL_PRICE_MICROS }, 'micro-USD');
  expectFigure(SCENARIO, 'billed by fal', billed, { equals: PARKED * FAL_PRICE_MICROS }, 'micro-USD');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, scale(300_000, 1_500_000));
