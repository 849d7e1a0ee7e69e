import { checkInvariants } from '../support/checker';
import { expectFigure, figure, scale } from '../support/figures';
import { chainRun, startTopologyPatiently } from '../support/fault-load';
import { startLoad, type LoadOptions } from '../support/load-clients';
import type { ServiceProcess } from '../support/service-process';
import type { Topology } from '../support/topology';
import { eventually } from '../../support/eventually';

/**
 * R7: a rolling restart mid-load. Each worker, then each API, gets SIGTERM (as a deploy sends),
 * must exit 0 within its grace period, and is started again before the next one goes. A
 * stopping worker finishes its in-flight steps or hands them back; a stopping API's streams are
 * resumed by their clients on the other API with nothing lost. No run may fail for it.
 */

const ID = 'R7';
const PASSES = scale(1, 2);
const GRACE_MS = 8000;
/** What a loaded two-core machine may add to a stop past the grace period (process exit, log flush). */
const STOP_SLACK_MS = 5000;

/** Two slowly streamed chat steps: a stop always meets steps in flight and streams open. */
const body = (tag: string): unknown => chainRun(tag, 2);

let topo: Topology;
beforeAll(async () => {
  topo = await startTopologyPatiently({ env: { SHUTDOWN_GRACE_MS: String(GRACE_MS) } });
  topo.provider.behave({ chunkDelayMs: 400 });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

it(`completes every run through ${PASSES} rolling restart(s) of every worker and API`, async () => {
  const options: LoadOptions = { url: topo.url, token: topo.account.token, concurrency: 10, body, tagPrefix: 'r7', runDeadlineMs: 180_000 };
  const load = startLoad(options);
  await eventually(() => load.done >= 10, { timeoutMs: 60_000, what: 'runs to flow before the restart' });
  /** Each stop: when SIGTERM went, how long the process took to exit, its code, and when its successor was ready (ms after SIGTERM). */
  const stops: { name: string; at: number; ms: number; code: number | null; upMs?: number }[] = [];
  const order: ServiceProcess[] = [...topo.workers, ...topo.apis];
  for (let pass = 0; pass < PASSES; pass++) {
    for (const proc of order) {
      const doneBefore = load.done;
      const started = Date.now();
      const code = await proc.stop();
      stops.push({ name: proc.name, at: started, ms: Date.now() - started, code });
      await proc.start();
      stops[stops.length - 1]!.upMs = Date.now() - started;
      // The next one goes only once runs flow again, as a rolling deploy waits for health.
      await eventually(() => load.done > doneBefore, { timeoutMs: 60_000, what: `runs to flow after restarting ${proc.name}` });
    }
  }
  const records = await load.stop();
  figure(ID, 'longest stall of the test process', load.maxStallMs, undefined, 'ms');
  console.log('R7 stops', JSON.stringify(stops.map((s) => ({ ...s, at: s.at - stops[0]!.at }))));

  const runIds = records.filter((r) => r.runId !== undefined).map((r) => r.runId!);
  const { rows } = await topo.database.pool.query<{ status: string; n: number }>('SELECT status, COUNT(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) GROUP BY status', [runIds]);
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  const { rows: handed } = await topo.database.pool.query<{ n: number }>('SELECT COUNT(*)::int AS n FROM steps WHERE run_id = ANY($1::uuid[]) AND attempt > 1', [runIds]);
  const gaveUp = records.filter((r) => r.gaveUp !== undefined);
  if (gaveUp.length > 0) console.log('R7 gave up', JSON.stringify(gaveUp.slice(0, 5).map((r) => [r.tag, r.runId, r.gaveUp])));

  figure(ID, 'runs', records.length);
  figure(ID, 'steps run again after a stop', handed[0]!.n);
  // A stream cut while an API process stopped (up to a second after it exited) is the drain at
  // work; any other cut is reported apart, with its reasons, to be looked at.
  const apiStops = stops.filter((s) => s.name.startsWith('api'));
  const cuts = records.flatMap((r) => r.cuts);
  const duringApiStop = cuts.filter((c) => apiStops.some((s) => c.at >= s.at && c.at <= s.at + s.ms + 1000));
  const otherCuts = cuts.filter((c) => !duringApiStop.includes(c));
  figure(ID, 'streams cut while an API stopped, then resumed', duringApiStop.length);
  figure(ID, 'streams cut at other times, then resumed', otherCuts.length);
  const reasons = (list: typeof cuts): Record<string, number> => list.reduce<Record<string, number>>((n, c) => ({ ...n, [c.why]: (n[c.why] ?? 0) + 1 }), {});
  const first = stops[0]!.at;
  console.log('R7 cuts', JSON.stringify({ duringApiStop: reasons(duringApiStop), other: reasons(otherCuts), otherAtMsAfterFirstStop: otherCuts.map((c) => c.at - first).sort((a, b) => a - b) }));
  figure(ID, 'longest stop', Math.max(...stops.map((s) => s.ms)), undefined, 'ms');
  figure(ID, 'stops past the grace period', stops.filter((s) => s.ms > GRACE_MS).length);
  expectFigure(ID, 'failed runs', (byStatus.failed ?? 0) + (byStatus.cancelled ?? 0), { max: 0 });
  expectFigure(ID, 'clients that gave up', gaveUp.length, { max: 0 });
  expectFigure(ID, 'stops past grace + slack', stops.filter((s) => s.ms > GRACE_MS + STOP_SLACK_MS).length, { max: 0 });
  expectFigure(ID, 'stops with an exit code other than 0', stops.filter((s) => s.code !== 0).length, { max: 0 });

  const check = await checkInvariants({ pool: topo.database.pool, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients: records, settleMs: 30_000 });
  if (check.violations.length > 0) console.log('R7 checker', check.violations.slice(0, 20), check.counts);
  expectFigure(ID, 'checker violations', check.violations.length, { max: 0 });
}, 420_000);
