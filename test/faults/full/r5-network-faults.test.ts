import { setTimeout as sleep } from 'node:timers/promises';
import { checkInvariants } from '../support/checker';
import { expectFigure, figure, scale } from '../support/figures';
import { chainRun, startTopologyPatiently } from '../support/fault-load';
import { startLoad, type LoadOptions } from '../support/load-clients';
import type { Topology } from '../support/topology';
import type { FaultProxy } from '../../support/fault-proxy';
import { eventually } from '../../support/eventually';

/**
 * R5: the network between the services and Redis, Postgres and the provider goes bad in turn
 * while runs flow: latency, a blackhole (new connections accepted and never answered, open ones
 * silent: a partition, healed by resetting what it left hanging, as keepalives would), and
 * resets of every connection. Every run must end, and provider calls must stay within their
 * timeout and the retry budget: at most (1 + providerFetch's 2 retries) calls an attempt and
 * STEP_MAX_ATTEMPTS attempts a step.
 */

const ID = 'R5';
const PROVIDER_TIMEOUT_MS = 3000;
const STEP_RETRY_ATTEMPTS = 2;
const STEP_MAX_ATTEMPTS = 3;
/** providerFetch's tries of one attempt: the first and its default 2 retries. */
const TRIES_PER_ATTEMPT = 3;
const CALLS_PER_STEP_BUDGET = TRIES_PER_ATTEMPT * STEP_MAX_ATTEMPTS;
/** A loaded two-core machine's lateness on top of the timeout (timers, the fake seeing the close). */
const CALL_SLACK_MS = 2000;
const PHASE_MS = scale(4000, 10_000);

/** One provider-backed step a run, so a run's tag counts one step's calls. */
const body = (tag: string): unknown => chainRun(tag, 1);

let topo: Topology;
beforeAll(async () => {
  topo = await startTopologyPatiently({
    env: { PROVIDER_TIMEOUT_MS: String(PROVIDER_TIMEOUT_MS), STEP_RETRY_ATTEMPTS: String(STEP_RETRY_ATTEMPTS), STEP_MAX_ATTEMPTS: String(STEP_MAX_ATTEMPTS) },
  });
  topo.provider.behave({ chunkDelayMs: 150 });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

type Path = 'redis' | 'postgres' | 'provider';

/** A partition of one path for `ms`: new connections go nowhere, open ones fall silent; healed by resetting them. */
async function blackhole(proxy: FaultProxy, ms: number): Promise<void> {
  proxy.mode = 'blackhole';
  proxy.blackholeOpen();
  await sleep(ms);
  proxy.mode = 'pass';
  proxy.resetAll();
}

async function latency(proxy: FaultProxy, latencyMs: number, ms: number): Promise<void> {
  proxy.latencyMs = latencyMs;
  await sleep(ms);
  proxy.latencyMs = 0;
}

/** Resets every connection of the path a few times over `ms`. */
async function resets(proxy: FaultProxy, ms: number): Promise<void> {
  for (let i = 0; i < 4; i++) {
    proxy.resetAll();
    await sleep(ms / 4);
  }
}

it('ends every run through latency, blackholes and resets on every path, within the provider timeout and retry budget', async () => {
  const options: LoadOptions = { url: topo.url, token: topo.account.token, concurrency: 8, body, tagPrefix: 'r5', runDeadlineMs: 180_000 };
  const load = startLoad(options);
  await eventually(() => load.done >= 8, { timeoutMs: 60_000, what: 'runs to flow before the faults' });
  const phases: [string, () => Promise<void>][] = [];
  for (const path of ['redis', 'postgres', 'provider'] as Path[]) {
    const proxy = topo.proxies[path];
    phases.push([`${path} latency`, () => latency(proxy, path === 'provider' ? 300 : 100, PHASE_MS)]);
    // The provider's partition outlasts its timeout, so calls are seen to give up.
    phases.push([`${path} blackhole`, () => blackhole(proxy, path === 'provider' ? PROVIDER_TIMEOUT_MS * 2 : PHASE_MS)]);
    phases.push([`${path} resets`, () => resets(proxy, PHASE_MS)]);
  }
  const phaseLog: { phase: string; ms: number; doneAfter: number }[] = [];
  for (const [phase, run] of phases) {
    const from = Date.now();
    await run();
    const doneBefore = load.done;
    // Each fault is followed by runs flowing again, so the next one meets a working service.
    await eventually(() => load.done > doneBefore, { timeoutMs: 90_000, what: `runs to flow again after ${phase}` });
    phaseLog.push({ phase, ms: Date.now() - from, doneAfter: load.done });
  }
  const records = await load.stop();
  console.log('R5 phases', JSON.stringify(phaseLog));

  const runIds = records.filter((r) => r.runId !== undefined).map((r) => r.runId!);
  const { rows } = await topo.database.pool.query<{ status: string; n: number }>('SELECT status, COUNT(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) GROUP BY status', [runIds]);
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  const calls = topo.provider.calls;
  const perStep = new Map<string, number>();
  for (const call of calls) if (call.tag) perStep.set(call.tag, (perStep.get(call.tag) ?? 0) + 1);
  const longest = Math.max(0, ...calls.map((c) => (c.endedAt ?? Date.now()) - c.startedAt));
  const gaveUp = records.filter((r) => r.gaveUp !== undefined);
  if (gaveUp.length > 0) console.log('R5 gave up', JSON.stringify(gaveUp.slice(0, 5).map((r) => [r.tag, r.runId, r.gaveUp])));

  figure(ID, 'runs', records.length);
  figure(ID, 'runs completed', byStatus.completed ?? 0);
  figure(ID, 'runs failed', byStatus.failed ?? 0);
  figure(ID, 'provider calls', calls.length);
  figure(ID, 'provider calls cut or unanswered', calls.filter((c) => c.status === 'cut' || c.status === 'hung').length);
  expectFigure(ID, 'clients that gave up', gaveUp.length, { max: 0 });
  expectFigure(ID, 'runs not terminal', runIds.length - (byStatus.completed ?? 0) - (byStatus.failed ?? 0) - (byStatus.cancelled ?? 0), { max: 0 });
  expectFigure(ID, 'most provider calls of one step', Math.max(0, ...perStep.values()), { max: CALLS_PER_STEP_BUDGET });
  expectFigure(ID, 'longest provider call', longest, { max: PROVIDER_TIMEOUT_MS + CALL_SLACK_MS }, 'ms');

  const check = await checkInvariants({ pool: topo.database.pool, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients: records, settleMs: 30_000 });
  if (check.violations.length > 0) console.log('R5 checker', check.violations.slice(0, 20), check.counts);
  // A POST without an Idempotency-Key whose commit's answer was lost is answered 503 and sent
  // again, and the run it did create runs too (checked and paid like any); a key prevents it.
  figure(ID, 'runs created by a request answered 5xx (unacknowledged, then sent again)', check.counts.unacknowledgedRuns);
  expectFigure(ID, 'checker violations', check.violations.length, { max: 0 });
}, 600_000);
