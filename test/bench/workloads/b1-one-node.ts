import { withPeer, type Workload } from '../support/context';
import { DbosPeer } from '../support/dbos-peer';
import { DesignFloor } from '../support/design-floor';
import { sequential } from '../support/load';
import { RawBullmq } from '../support/raw-bullmq';
import type { Row } from '../support/report';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from '../support/service-client';

/**
 * B1: a 1-node workflow, POST /v1/runs → `data: [DONE]`, sequential (one at a time: latency, not
 * load). Peers in the same run: raw BullMQ (add → process → publish → subscriber), a DBOS
 * Transact 1-step workflow (started and awaited) on the same Postgres, and the design's floor
 * (support/design-floor.ts) behind the same HTTP client as ours.
 */
export const b1: Workload = {
  id: 'B1',
  title: '1-node workflow, POST → [DONE], sequential',
  async run(ctx) {
    const count = ctx.scale(2000, 300);
    const service = await ctx.service();
    const body = JSON.stringify(ONE_NODE);
    const ours = await sequential(ctx, 'B1 ours', 200, count, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    ctx.say(`ours        ${ours.summary()}`);
    const rawLatency = await withPeer(RawBullmq.forBench(ctx, 'B1 raw BullMQ'), (raw) => sequential(ctx, 'B1 raw BullMQ', 200, count, () => raw.once()));
    ctx.say(`raw BullMQ  ${rawLatency.summary()}`);
    const dbosLatency = await withPeer(DbosPeer.start({ stack: ctx.stack }), (dbos) => sequential(ctx, 'B1 DBOS', 200, count, () => dbos.oneStep()));
    ctx.say(`DBOS        ${dbosLatency.summary()}`);
    const floorLatency = await withPeer(DesignFloor.forBench(ctx, 'B1 design floor'), (floor) => sequential(ctx, 'B1 design floor', 200, count, () => runOnce(floor, body, ONE_NODE_OUTPUTS)));
    ctx.say(`design floor ${floorLatency.summary()}`);
    const p50 = ours.percentile(50);
    const rows: Row[] = [
      { id: 'B1', figure: '1-node run p50', ours: p50, unit: 'ms', kind: 'time', peer: { name: 'DBOS 1-step', value: dbosLatency.percentile(50) }, goal: { text: '≤ 4 ms and ≤ 0.7× DBOS', met: p50 <= 4 && p50 / dbosLatency.percentile(50) <= 0.7 } },
      { id: 'B1', figure: '1-node run p99', ours: ours.percentile(99), unit: 'ms', kind: 'time', peer: { name: 'DBOS 1-step', value: dbosLatency.percentile(99) } },
      { id: 'B1', figure: '1-node run p50', ours: p50, unit: 'ms', kind: 'time', peer: { name: 'raw BullMQ', value: rawLatency.percentile(50) } },
      { id: 'B1', figure: '1-node run max', ours: ours.max, unit: 'ms', kind: 'time', peer: { name: 'raw BullMQ', value: rawLatency.max } },
      { id: 'B1', figure: '1-node run p50', ours: p50, unit: 'ms', kind: 'time', peer: { name: 'design floor', value: floorLatency.percentile(50) } },
      { id: 'B1', figure: 'design floor p50 ÷ DBOS p50', ours: floorLatency.percentile(50) / dbosLatency.percentile(50), unit: '×', kind: 'time' },
    ];
    return rows;
  },
};
