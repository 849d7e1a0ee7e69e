import { withPeer, type Workload } from '../support/context';
import { DbosPeer } from '../support/dbos-peer';
import { RawBullmq } from '../support/raw-bullmq';
import { atMost, type Row } from '../support/report';
import { mathChain, runOnce } from '../support/service-client';

const LENGTH = 100;

const median = (samples: readonly number[]) => [...samples].sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)] ?? NaN;

/** `count` sequential samples after `warmup`; the median in ms per step. */
async function perStep(ctx: Parameters<Workload['run']>[0], phase: string, warmup: number, count: number, once: () => Promise<number>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < warmup + count; i++) {
    try {
      const ms = await once();
      if (i >= warmup) samples.push(ms);
    } catch (err) {
      ctx.fail(phase, err);
    }
  }
  const result = median(samples) / LENGTH;
  ctx.say(`${phase.padEnd(28)} ${result.toFixed(3)} ms per step  (runs: ${samples.map((t) => t.toFixed(0)).join(' ')} ms)`);
  return result;
}

/**
 * B2: a 100-node chain of cheap nodes, POST → [DONE]; ms per step (median run). Peers: a raw
 * BullMQ chain (each job adds the next), the same chain with one durable Postgres insert per
 * step (what a durable step costs at least: our steps are committed to Postgres), and a DBOS
 * 100-step workflow.
 */
export const b2: Workload = {
  id: 'B2',
  title: `${LENGTH}-node chain of cheap nodes, POST → [DONE], per step`,
  async run(ctx) {
    const runs = ctx.scale(10, 3);
    const service = await ctx.service();
    const chain = mathChain(LENGTH);
    const body = JSON.stringify(chain.body);
    const ours = await perStep(ctx, 'ours', 2, runs, () => runOnce(service, body, chain.outputs));
    const [rawStep, durableStep] = await withPeer(RawBullmq.forBench(ctx, 'B2 raw BullMQ'), async (raw) => [
      await perStep(ctx, 'raw BullMQ chain', 2, runs, () => raw.chainOnce(LENGTH)),
      await perStep(ctx, 'raw BullMQ + pg insert chain', 2, runs, () => raw.chainOnce(LENGTH, true)),
    ]);
    const dbosStep = await withPeer(DbosPeer.start({ stack: ctx.stack }), (dbos) => perStep(ctx, 'DBOS 100-step workflow', 2, runs, () => dbos.chain(LENGTH)));
    const rows: Row[] = [
      { id: 'B2', figure: `${LENGTH}-node chain, per step`, ours, unit: 'ms', kind: 'time', peer: { name: 'BullMQ + insert chain', value: durableStep }, goal: atMost('≤ 1.25×', ours / durableStep, 1.25) },
      { id: 'B2', figure: `${LENGTH}-node chain, per step`, ours, unit: 'ms', kind: 'time', peer: { name: 'DBOS 100-step', value: dbosStep }, goal: atMost('≤ 0.6×', ours / dbosStep, 0.6) },
      { id: 'B2', figure: `${LENGTH}-node chain, per step`, ours, unit: 'ms', kind: 'time', peer: { name: 'raw BullMQ chain', value: rawStep } },
    ];
    return rows;
  },
};
