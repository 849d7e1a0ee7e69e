import { reportRuns, startBatch, startTopologyPatiently, terminalRuns, unfinishedRuns, untilInFlight } from './support/fault-load';
import { expectFigure, figure, scale } from './support/figures';
import type { Topology } from './support/topology';

/**
 * P2: a provider's request rate, shared by two workers through Redis, holds across a graceful
 * Redis restart (AOF flushed, reloaded, as R3's). `PROVIDER_LIMITS="openai: rpm=1200"` (20
 * requests a second); runs of a chain of provider steps, all posted at once, keep more steps
 * waiting for their turn than the rate lets through, so the limiter, not the load, sets the pace
 * before, during and after the restart. The fake refuses (429) a call beyond 1.1 × the rate in any
 * sliding second, as a provider would.
 *
 * Proven: the busiest sliding second at the fake among windows that end after the restart began
 * (from every call's arrival time) is within 1.1 × the rate + 1; the fake refused nothing; every
 * run completes, every stream ends with its terminal event then [DONE], and the checker finds
 * nothing (no step lost, none committed twice, money whole). The restart lands mid-flow: a third
 * of the steps have called the provider, and most of the calls come after it.
 */

const SCENARIO = 'P2';
const RATE = 20;
const BOUND = Math.floor(1.1 * RATE) + 1;
const STEPS = scale(160, 2000);
const CHAIN = 4;
const RUNS = Math.ceil(STEPS / CHAIN);

let topo: Topology;
beforeAll(async () => {
  // One API: the fault is Redis's (and each process started costs seconds on a loaded machine).
  // A dollar a run: each run reserves its maxCostUsd (0.5) from the organization's credit while it lasts.
  topo = await startTopologyPatiently({ apis: 1, creditUsd: String(Math.max(100, RUNS)), env: { PROVIDER_LIMITS: `openai: rpm=${RATE * 60}` } });
}, 400_000);
afterAll(async () => topo?.close(), 60_000);

/** The most of `times` (sorted, ms) inside one sliding second that starts at or after `from`. */
function busiestSecond(times: readonly number[], from: number): number {
  let most = 0;
  let end = 0;
  for (let start = 0; start < times.length; start += 1) {
    if (times[start]! < from) continue;
    end = Math.max(end, start);
    while (end < times.length && times[end]! < times[start]! + 1000) end += 1;
    most = Math.max(most, end - start);
  }
  return most;
}

it(`P2: ${RUNS} runs of ${CHAIN} provider steps under rpm=${RATE * 60} across a Redis restart: the rate holds within 10%, nothing refused, every run completes`, async () => {
  const { provider } = topo;
  provider.behave({ delayMs: 100, chunkDelayMs: 0, refuseAbovePerSecond: BOUND });
  const batch = startBatch(topo, 'p2', RUNS, { steps: CHAIN, deadlineMs: scale(180_000, 600_000) });
  await untilInFlight(topo, batch, Math.ceil(STEPS / 3));
  const faultAt = Date.now();
  await topo.servers.restartRedis();
  const backAt = Date.now();
  const records = await batch.done;

  const tags = new Set(batch.tags);
  const calls = provider.calls.filter((c) => c.tag !== null && tags.has(c.tag));
  const refused = calls.filter((c) => c.httpStatus === 429).length;
  const times = calls.filter((c) => c.httpStatus !== 429).map((c) => c.startedAt).sort((a, b) => a - b);
  const after = times.filter((t) => t >= faultAt);
  const busiestAfter = busiestSecond(times, faultAt - 1000);
  const busiestBefore = busiestSecond(times.filter((t) => t < faultAt), 0);
  const spanAfterS = after.length > 1 ? (after.at(-1)! - after[0]!) / 1000 : Number.NaN;
  const runIds = records.map((r) => r.runId).filter((id): id is string => id !== undefined);
  const runs = await terminalRuns(topo, runIds);
  const notCompleted = records.filter((r) => r.runId === undefined || r.gaveUp !== undefined).length + runs.failed;

  console.log(JSON.stringify({ notCompleted, gaveUp: records.flatMap((r) => (r.gaveUp ? [`${r.httpStatus} ${r.gaveUp}`] : [])).slice(0, 5), calls: calls.length, refused, after: after.length, busiestBefore, busiestAfter, redisAwayMs: backAt - faultAt, spanAfterS, runs }));
  if (notCompleted > 0) console.log(JSON.stringify({ unfinished: await unfinishedRuns(topo, runIds), at: Date.now(), restartAt: faultAt }));
  expectFigure(SCENARIO, 'runs not completed', notCompleted, { equals: 0 }, 'runs');
  figure(SCENARIO, 'Redis away (restart to answering again)', backAt - faultAt, undefined, 'ms');
  figure(SCENARIO, `busiest sliding second before the restart (rate ${RATE}/s)`, busiestBefore, undefined, 'calls');
  expectFigure(SCENARIO, `busiest sliding second from the restart on (rate ${RATE}/s)`, busiestAfter, { max: BOUND }, 'calls');
  figure(SCENARIO, 'calls a second after the restart, on average', Number((after.length / spanAfterS).toFixed(1)), undefined, 'calls/s');
  expectFigure(SCENARIO, 'provider calls after the restart', after.length, { min: Math.floor(STEPS / 3) }, 'calls');
  expectFigure(SCENARIO, `calls the provider refused (429 above ${BOUND} in a second)`, refused, { equals: 0 }, 'calls');
  figure(SCENARIO, 'provider calls beyond one per step', Math.max(0, times.length - RUNS * CHAIN), undefined, 'calls');
  const { misses } = await reportRuns(topo, SCENARIO, 'Redis restart under a rate limit', records);
  if (misses.length > 0) throw new Error(`${SCENARIO}: ${misses.join('; ')}`);
}, scale(240_000, 900_000));
