import { withPeer, type BenchContext, type Workload } from '../support/context';
import { DesignFloor } from '../support/design-floor';
import { sustainedRate, type OpenLoopResult } from '../support/load';
import { RawBullmq } from '../support/raw-bullmq';
import { atLeast, atMost, type Row } from '../support/report';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from '../support/service-client';

/** The p99 a rate must keep to count as sustained (the goal: ≥ 1,000 runs/s at p99 ≤ 100 ms). */
export const SUSTAINED_P99_MS = 100;

/** Offered rates, ascending: the ladder climbs until a step no longer keeps up. */
export function ladder(ctx: BenchContext, top: number): number[] {
  const steps = ctx.scale([50, 100, 200, 300, 400, 500, 650, 800, 1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000, 6500, 8000, 10000, 13000, 16000], [50, 100, 200, 400, 800, 1600, 3200, 6400, 12800]);
  return steps.filter((r) => r <= top);
}

type Best = (OpenLoopResult & { rate: number }) | undefined;
const rateOf = (best: Best) => best?.completed ?? 0;

/**
 * B4: sustained 1-node runs per second, open loop (runs started on a timer whatever the earlier
 * ones are doing; latency from each run's scheduled start), every process on this machine: the
 * highest offered rate the service completes within 5% at p99 ≤ 100 ms. Peers, found the same way
 * in the same run: raw BullMQ jobs (add → process → publish → subscriber), and the design's floor
 * (support/design-floor.ts: the two durable commits, the queue hop and the stream a run needs at
 * the least, behind the same HTTP client).
 */
export const b4: Workload = {
  id: 'B4',
  title: 'sustained 1-node runs/s, open loop, p99 ≤ 100 ms',
  async run(ctx) {
    const seconds = ctx.scale(10, 4);
    const service = await ctx.service();
    const body = JSON.stringify(ONE_NODE);
    ctx.say('ours:');
    const ours = await sustainedRate(ctx, 'B4 ours', { rates: ladder(ctx, 20_000), seconds, p99Ms: SUSTAINED_P99_MS }, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    ctx.say('raw BullMQ:');
    const peer = await withPeer(RawBullmq.forBench(ctx, 'B4 raw BullMQ'), (raw) =>
      sustainedRate(ctx, 'B4 raw BullMQ', { rates: ladder(ctx, 40_000), seconds, p99Ms: SUSTAINED_P99_MS }, () => raw.once()),
    );
    ctx.say('design floor:');
    const floor = await withPeer(DesignFloor.forBench(ctx, 'B4 design floor'), (peer) =>
      sustainedRate(ctx, 'B4 design floor', { rates: ladder(ctx, 20_000), seconds, p99Ms: SUSTAINED_P99_MS }, () => runOnce(peer, body, ONE_NODE_OUTPUTS)),
    );
    const oursRate = rateOf(ours.best);
    // No rate held (a machine slower than its first rung): no ratio to print, and the goal is not met.
    const rawOverOurs = oursRate > 0 ? rateOf(peer.best) / oursRate : NaN;
    const rows: Row[] = [
      { id: 'B4', figure: 'sustained runs/s at p99 ≤ 100 ms', ours: oursRate, unit: '/s', kind: 'rate', peer: { name: 'raw BullMQ jobs/s', value: rateOf(peer.best) }, goal: atLeast('≥ 1,000/s', oursRate, 1000) },
      { id: 'B4', figure: 'sustained runs/s at p99 ≤ 100 ms', ours: oursRate, unit: '/s', kind: 'rate', peer: { name: 'design floor', value: rateOf(floor.best) } },
      { id: 'B4', figure: 'raw ÷ ours', ours: rawOverOurs, unit: '×', kind: 'time', goal: atMost('≤ 8×', rawOverOurs, 8) },
      { id: 'B4', figure: 'raw ÷ design floor', ours: rateOf(floor.best) > 0 ? rateOf(peer.best) / rateOf(floor.best) : NaN, unit: '×', kind: 'time' },
      { id: 'B4', figure: 'p99 at the sustained rate', ours: ours.best?.latency.percentile(99) ?? NaN, unit: 'ms', kind: 'time', peer: { name: 'raw BullMQ', value: peer.best?.latency.percentile(99) ?? NaN } },
    ];
    return rows;
  },
};
