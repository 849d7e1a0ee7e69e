import { eventually } from '../support/eventually';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import type { ProviderCall } from './support/provider-fake';
import { followRun } from './support/run-client';
import { startTopology, type Topology } from './support/topology';
import { doubleCommitsInSql, extraProviderCalls, LOCAL_PRICES, repeatedCompletionsSeen, runBody, runningSteps, takenOver, type FlowClient } from './support/worker-faults';

/**
 * P1: a worker holding many provider steps in flight at once, most of them on lent slots
 * (WORKER_CONCURRENCY=4, the rest beyond it under PROVIDER_STEP_CONCURRENCY), is SIGKILLed while
 * a second worker runs, under a shared `calls=` limit a little above what it held and
 * PROVIDER_LIMIT_LEASE_SECONDS=3.
 *
 * The fake holds every answer (a gate) so the victim's calls are all in flight together: worker-2
 * is stopped while the first batch is taken, so every call in flight is the victim's; then
 * worker-2 starts and the victim is killed. The dead worker's call slots are leases nobody renews:
 * a second batch started at the kill can fill the limit again only once they lapse. While the gate
 * stays closed, the fake's in-flight count reaching `calls=` is the proof that the slots came back
 * (without the lapse it would stay at calls= minus what the victim held); the time it took is a
 * figure. The provider never has more than `calls=` in flight (from every call's interval at the
 * fake). Then the gate opens: every run completes, no step commits twice (ledger, local steps'
 * costs, the clients' streams, the checker), a step is called again at most once per attempt the
 * kill lost, and the money invariants hold.
 */

const SCENARIO = 'P1';
const HELD = scale(60, 500);
/** `calls=`: somewhat above what the victim holds, so the second batch starts at once but fills it only with the victim's slots back. */
const LIMIT = HELD + scale(10, 50);
const LEASE_SECONDS = 3;
const WORKER_SLOTS = 4;

let topo: Topology;
beforeAll(async () => {
  const env = {
    WORKER_CONCURRENCY: String(WORKER_SLOTS),
    PROVIDER_LIMITS: `openai: calls=${LIMIT}`,
    PROVIDER_LIMIT_LEASE_SECONDS: String(LEASE_SECONDS),
    // Fair scheduling would cap the organization's steps below what is held here.
    ORG_STEP_CONCURRENCY: '0',
    // Calls stay held at the gate for as long as the scenario needs; no call times out meanwhile.
    PROVIDER_TIMEOUT_MS: '300000',
  };
  // One API: the fault is a worker's (and each process started costs seconds on a loaded machine).
  // A dollar a run: each run reserves its spending cap (0.50 by default) from the credit while it lasts.
  topo = await startTopology({ apis: 1, env, creditUsd: String(Math.max(100, HELD + LIMIT)) });
}, 300_000);
afterAll(async () => {
  topo?.provider.behave({ hold: false });
  await topo?.close();
}, 60_000);

/** The fake's in-flight count after each change, in time order (a call still open counts until now). */
function inFlightTimeline(calls: readonly ProviderCall[]): { at: number; inFlight: number }[] {
  const now = Date.now();
  const edges = calls.flatMap((c) => [
    { at: c.startedAt, d: 1 },
    { at: c.endedAt ?? now, d: -1 },
  ]);
  // An end before a start at the same instant: a slot handed on is not two at once.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let inFlight = 0;
  return edges.map(({ at, d }) => ({ at, inFlight: (inFlight += d) }));
}

/** The most calls the fake had in flight at one instant. */
const mostInFlight = (calls: readonly ProviderCall[]): number => Math.max(0, ...inFlightTimeline(calls).map((p) => p.inFlight));

/** The first moment after `from` (strictly: the edges at `from` itself are the last of what came before) when the fake had more than `level` calls in flight (NaN: never). */
const firstAbove = (calls: readonly ProviderCall[], from: number, level: number): number => inFlightTimeline(calls).find((p) => p.at > from && p.inFlight > level)?.at ?? Number.NaN;

it(`P1: a worker SIGKILLed with ${HELD} provider calls in flight under calls=${LIMIT}: its slots come back within the lease, the limit holds, every run completes once`, async () => {
  const { pool } = topo.database;
  const { provider } = topo;
  const [victim, other] = [topo.workers[0]!, topo.workers[1]!];
  const follow = (tag: string): Promise<FlowClient> =>
    followRun(topo.url, topo.account.token, runBody('chat', tag), { deadlineMs: scale(240_000, 900_000), heartbeatMs: Number(topo.env.SSE_HEARTBEAT_MS) }).then((record) => ({ tag, shape: 'chat' as const, record }));

  await other.stop();
  provider.behave({ hold: true, delayMs: 0, chunkDelayMs: 0 });
  const held = Array.from({ length: HELD }, (_, i) => follow(`p1-held-${i}`));
  await eventually(() => provider.inFlight() >= HELD, { timeoutMs: scale(120_000, 400_000), intervalMs: 50, what: `the victim to have ${HELD} provider calls in flight` });
  const victimInFlight = provider.inFlight();
  await other.start();

  const running = await runningSteps(pool);
  const killAt = Date.now();
  await victim.kill();
  const after = Array.from({ length: LIMIT }, (_, i) => follow(`p1-after-${i}`));
  // The fake sees the victim's calls go with it (the connections close); their slots stay taken until the lease lapses.
  await eventually(() => provider.calls.every((c) => c.startedAt > killAt || c.endedAt !== null), { timeoutMs: 10_000, intervalMs: 20, what: "the victim's calls to end at the provider" });
  // Only the dead worker's slots coming back lets the second batch (and the taken-over steps) fill the limit while the gate is closed.
  await eventually(() => provider.inFlight() >= LIMIT, { timeoutMs: LEASE_SECONDS * 1000 + 60_000, intervalMs: 20, what: `${LIMIT} calls in flight again after the kill` });
  const refillMs = Date.now() - killAt;
  // Above calls= minus what the victim held, a call can only hold a slot the dead worker held: the first such is its lease lapsing.
  const victimGoneAt = Math.max(...provider.calls.filter((c) => c.startedAt <= killAt).map((c) => c.endedAt ?? killAt));
  const reusedMs = firstAbove(provider.calls, victimGoneAt, LIMIT - victimInFlight) - killAt;
  const mostWhileHeld = mostInFlight(provider.calls);
  provider.behave({ hold: false });
  const clients = [...(await Promise.all(held)), ...(await Promise.all(after))];

  const runIds = clients.flatMap((c) => (c.record.runId ? [c.record.runId] : []));
  const check = await checkInvariants({ pool, apiUrl: topo.url, token: topo.account.token, provider, clients: clients.map((c) => c.record), localPrices: LOCAL_PRICES, settleMs: 30_000 });
  const { rows } = await pool.query<{ id: string; status: string }>(`SELECT id, status FROM runs WHERE id = ANY($1::uuid[])`, [runIds]);
  const status = new Map(rows.map((r) => [r.id, r.status]));
  const notCompleted = clients.filter((c) => c.record.gaveUp !== undefined || !c.record.runId || status.get(c.record.runId) !== 'completed');
  const doubles = [...(await doubleCommitsInSql(pool, runIds)), ...clients.flatMap((c) => repeatedCompletionsSeen(c.record)), ...check.violations.filter((v) => v.includes('committed twice'))];
  const extra = extraProviderCalls(provider, clients);
  const taken = await takenOver(pool, running);
  const most = mostInFlight(provider.calls);

  console.log(JSON.stringify({ victimInFlight, running: running.length, taken: taken.length, refillMs, reusedMs, mostWhileHeld, most, extra, counts: check.counts, notCompleted: notCompleted.slice(0, 10).map((c) => [c.tag, c.record.runId, c.record.gaveUp]), doubles: doubles.slice(0, 10), violations: check.violations.slice(0, 20) }));
  expectFigure(SCENARIO, `provider calls in flight at the victim when killed (WORKER_CONCURRENCY=${WORKER_SLOTS})`, victimInFlight, { min: HELD }, 'calls');
  figure(SCENARIO, 'steps running when the victim was killed', running.length, undefined, 'steps');
  figure(SCENARIO, 'steps taken over by another attempt', taken.length, undefined, 'steps');
  figure(SCENARIO, `kill → the first of the dead worker's call slots in use again (lease ${LEASE_SECONDS} s)`, Number.isNaN(reusedMs) ? 'never' : reusedMs, undefined, 'ms');
  figure(SCENARIO, `kill → ${LIMIT} calls in flight again (lease ${LEASE_SECONDS} s; the second batch's ramp included)`, refillMs, undefined, 'ms');
  expectFigure(SCENARIO, `provider calls in flight at once, at most (calls=${LIMIT})`, most, { max: LIMIT }, 'calls');
  expectFigure(SCENARIO, 'runs not completed', notCompleted.length, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'double commits', doubles.length, { max: 0 });
  expectFigure(SCENARIO, 'provider calls beyond the first per step', extra, { max: running.length }, 'calls');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, scale(300_000, 1_500_000));
