import { buildService } from '../../../services/composition';
import { createLogger } from '../../../services/platform/logger';
import { createMetrics } from '../../../services/platform/metrics';
import { eventually } from '../../support/eventually';
import { seedAccount } from '../../support/fixtures';
import type { BenchContext, Workload } from '../support/context';
import { closedLoop } from '../support/load';
import { atLeast, atMost, type Row } from '../support/report';
import { ONE_NODE, ONE_NODE_OUTPUTS, post, runOnce } from '../support/service-client';

/** Clients posting the flood at once. */
const FLOOD_CLIENTS = 32;
const WINDOW = 32;

interface Phase {
  /** From the worker's start to the other organization's `[DONE]`, ms. */
  delayMs: number;
  /** Steps of the flood that finished before the other organization's. */
  floodDoneBefore: number;
  /** The whole flood's runs/s, from the worker's start to its last completion. */
  drainPerSecond: number;
}

/**
 * One phase: an API process alone stores a flood of 1-node runs from one organization (no worker
 * takes them yet: the backlog is whole), then one run of another organization, whose stream stays
 * open; then a worker starts, and the other organization's run is timed from that start to its
 * `[DONE]`, and the flood to its last completion.
 */
async function phase(ctx: BenchContext, fair: boolean, flood: number): Promise<Phase> {
  const mode = fair ? 'fair' : 'fifo';
  const api = await ctx.startService({ env: { ROLE: 'api', REDIS_PREFIX: `svcb10${mode}`, FAIR_SCHEDULING: String(fair), FAIR_DISPATCH_WINDOW: String(WINDOW), WORKER_CONCURRENCY: '16' } });
  let worker: Awaited<ReturnType<typeof buildService>> | undefined;
  try {
    const other = await seedAccount(api.prisma, { slug: `b10-other-${mode}`, scopes: ['read', 'run'], balanceMicros: 1_000_000_000 });
    const body = JSON.stringify(ONE_NODE);
    let posted = 0;
    const client = async () => {
      while (posted < flood) {
        posted++;
        const res = await post(`${api.url}/v1/runs`, body, { Authorization: `Bearer ${api.account.token}` });
        if (res.statusCode !== 200) throw new Error(`POST /v1/runs answered ${res.statusCode}`);
        // Stored and announced once the headers are in; the stream is not needed.
        res.destroy();
      }
    };
    await Promise.all(Array.from({ length: FLOOD_CLIENTS }, client));
    ctx.say(`${mode}: ${flood} runs of one organization stored, none started`);
    let workerStarted = 0;
    const late = runOnce(api, body, ONE_NODE_OUTPUTS, other.token).then(() => performance.now() - workerStarted);
    // The other organization's run is stored and its step enqueued before the worker starts.
    await eventually(async () => (await api.prisma.run.count({ where: { orgId: other.orgId } })) === 1, { timeoutMs: 60_000, what: "the other organization's run stored" });
    workerStarted = performance.now();
    worker = await buildService({ config: { ...api.config, role: 'worker' }, log: createLogger({ level: api.config.logLevel }), metrics: createMetrics({ role: 'bench' }) });
    const delayMs = await late;
    // Steps of the flood that finished before the other organization's (Postgres' clock, so exact;
    // a lone first step is reserved with its run and has no started_at).
    const [{ n }] = await api.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM steps s JOIN runs r ON r.id = s.run_id
      WHERE r.org_id = ${api.account.orgId}::uuid AND s.finished_at < (SELECT s2.finished_at FROM steps s2 JOIN runs r2 ON r2.id = s2.run_id WHERE r2.org_id = ${other.orgId}::uuid)`;
    const floodDoneBefore = n;
    await eventually(async () => (await api.prisma.run.count({ where: { orgId: api.account.orgId, status: 'completed' } })) === flood, { timeoutMs: 600_000, what: 'the flood completed' });
    const drainPerSecond = flood / ((performance.now() - workerStarted) / 1000);
    ctx.say(`${mode}: the other organization's run completed ${delayMs.toFixed(0)} ms after the worker started, its step finished after ${floodDoneBefore} of the flood's; the flood drained at ${drainPerSecond.toFixed(0)} runs/s`);
    return { delayMs, floodDoneBefore, drainPerSecond };
  } finally {
    await worker?.close();
    await api.close();
  }
}

/** 1-node runs/s, POST to [DONE], of a closed loop of FLOOD_CLIENTS on a service of its own (API and worker in one process). */
async function closedLoopRate(ctx: BenchContext, fair: boolean): Promise<number> {
  const mode = fair ? 'fair' : 'fifo';
  const service = await ctx.startService({ env: { REDIS_PREFIX: `svcb10loop${mode}`, FAIR_SCHEDULING: String(fair), FAIR_DISPATCH_WINDOW: String(WINDOW), WORKER_CONCURRENCY: '16' } });
  try {
    const body = JSON.stringify(ONE_NODE);
    const result = await closedLoop(ctx, `B10 closed loop, ${mode}`, { clients: FLOOD_CLIENTS, seconds: ctx.scale(10, 4) }, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    ctx.say(`${mode}: ${FLOOD_CLIENTS} clients, each a 1-node run after another: ${result.perSecond.toFixed(0)} runs/s, latency ${result.latency.summary()}`);
    return result.perSecond;
  } finally {
    await service.close();
  }
}

/**
 * B10: fair scheduling (docs/scheduling.md). Another organization's run behind one
 * organization's flood of runs: how long after the workers start does it complete, with fair
 * scheduling and with one FIFO queue (`FAIR_SCHEDULING=false`, the peer: BullMQ's open-source
 * queue as it is), and what fairness costs the flood's own throughput. Postgres with fsync on.
 */
export const b10: Workload = {
  id: 'B10',
  title: 'fair scheduling: another organization behind a flood',
  async run(ctx) {
    const flood = ctx.scale(2000, 400);
    const fair = await phase(ctx, true, flood);
    const fifo = await phase(ctx, false, flood);
    const fairLoop = await closedLoopRate(ctx, true);
    const fifoLoop = await closedLoopRate(ctx, false);
    const rows: Row[] = [
      {
        id: 'B10',
        figure: `another organization's 1-node run behind ${flood} of one organization's: worker start → [DONE]`,
        ours: fair.delayMs,
        unit: 'ms',
        kind: 'time',
        peer: { name: 'ours, one FIFO queue', value: fifo.delayMs },
        goal: atMost(`finished after ≤ ${WINDOW + 16 + 1} of the flood's steps (window + concurrency + 1)`, fair.floodDoneBefore, WINDOW + 16 + 1),
      },
      {
        id: 'B10',
        figure: `the flood's drain once a worker starts, runs/s (${flood} 1-node runs; FIFO's jobs were all added before)`,
        ours: fair.drainPerSecond,
        unit: '/s',
        kind: 'rate',
        peer: { name: 'ours, one FIFO queue', value: fifo.drainPerSecond },
      },
      {
        id: 'B10',
        figure: `1-node runs/s, POST → [DONE], closed loop of ${FLOOD_CLIENTS}: what fair scheduling costs`,
        ours: fairLoop,
        unit: '/s',
        kind: 'rate',
        peer: { name: 'ours, one FIFO queue', value: fifoLoop },
        goal: atLeast('≥ 90% of FIFO', fairLoop / fifoLoop, 0.9),
      },
    ];
    return rows;
  },
};
