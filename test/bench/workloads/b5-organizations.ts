import { seedAccount } from '../../support/fixtures';
import type { Workload } from '../support/context';
import { sustainedRate } from '../support/load';
import { atLeast, type Row } from '../support/report';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from '../support/service-client';
import { ladder, SUSTAINED_P99_MS } from './b4-sustained';

const ORGANIZATIONS = 50;

/**
 * B5: B4's sustained rate with every run from one organization against the same load spread
 * over fifty (round robin). Whatever is per organization (its balance row, its stream slots, its
 * rate limits) must not become one hot row: one organization should get ≥ 80% of fifty's rate.
 */
export const b5: Workload = {
  id: 'B5',
  title: `sustained 1-node runs/s: one organization vs ${ORGANIZATIONS}`,
  async run(ctx) {
    const seconds = ctx.scale(10, 4);
    const service = await ctx.service();
    const body = JSON.stringify(ONE_NODE);
    const tokens: string[] = [];
    for (let i = 0; i < ORGANIZATIONS; i++) tokens.push((await seedAccount(service.prisma, { slug: `bench-org-${i}`, scopes: ['read', 'run'], balanceMicros: 1_000_000_000 })).token);
    let next = 0;
    ctx.say(`${ORGANIZATIONS} organizations:`);
    const spread = await sustainedRate(ctx, 'B5 fifty organizations', { rates: ladder(ctx, 20_000), seconds, p99Ms: SUSTAINED_P99_MS }, () => runOnce(service, body, ONE_NODE_OUTPUTS, tokens[next++ % tokens.length]));
    ctx.say('one organization:');
    const one = await sustainedRate(ctx, 'B5 one organization', { rates: ladder(ctx, 20_000), seconds, p99Ms: SUSTAINED_P99_MS }, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    const oneRate = one.best?.completed ?? 0;
    const spreadRate = spread.best?.completed ?? 0;
    const rows: Row[] = [
      { id: 'B5', figure: 'sustained runs/s, one organization', ours: oneRate, unit: '/s', kind: 'rate', peer: { name: `ours, ${ORGANIZATIONS} organizations`, value: spreadRate }, goal: atLeast('≥ 80% of fifty', oneRate / Math.max(spreadRate, 1e-9), 0.8) },
    ];
    return rows;
  },
};
