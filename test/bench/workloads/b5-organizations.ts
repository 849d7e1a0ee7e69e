import { randomUUID } from 'node:crypto';
import { createDatabase, RunRepository, StepRepository } from '../../../services/store';
import { seedAccount, type SeededAccount } from '../../support/fixtures';
import type { BenchContext, Workload } from '../support/context';
import { closedLoop, sustainedRate } from '../support/load';
import { sampleWaits } from '../support/pg-waits';
import { atLeast, type Row } from '../support/report';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from '../support/service-client';
import { ladder, SUSTAINED_P99_MS } from './b4-sustained';

const ORGANIZATIONS = 50;

/** Concurrent runs of the store-level phase: about what the service's pool and creation batcher admit at their defaults. */
const STORE_CLIENTS = 32;

/**
 * Runs/s of the run store alone (no HTTP, no Redis, no worker): a closed loop of
 * STORE_CLIENTS, each storing a 1-step run that holds its cap of its organization's balance
 * with its step reserved (svc_create_runs), then committing the step with the run's outputs
 * (svc_complete_steps: the charge and the settlement), the organization taken round robin from
 * `accounts`, through the repositories as the service uses them (creations and settling commits
 * of one organization that queue go together). These are the two writes of an organization's row
 * per run, without the CPU of the rest of the service, which on a small machine hides them (the
 * sustained phases above).
 */
async function storeRate(ctx: BenchContext, phase: string, accounts: SeededAccount[]): Promise<{ rate: number; waits: string[] }> {
  const database = createDatabase(ctx.stack.databaseUrl, { poolSize: STORE_CLIENTS });
  const runs = new RunRepository(database);
  const steps = new StepRepository(database);
  let next = 0;
  const once = async () => {
    const account = accounts[next++ % accounts.length]!;
    const attemptToken = randomUUID();
    const runId = await runs.createRun({
      orgId: account.orgId,
      userId: account.userId,
      tokenId: account.tokenId,
      definition: { version: 2, nodes: ['a'] },
      inputs: {},
      capMicros: 100_000,
      steps: [{ nodeId: 'a', pendingDeps: 0, reservation: { estimateMicros: 10_000, attemptToken } }],
      requireCredit: true,
      start: true,
    });
    const done = await steps.completeStep({ runId, orgId: account.orgId, nodeId: 'a', attemptToken, costMicros: 1_000, output: {}, ms: 1, dependents: [], runOutputs: {} });
    if (!done.committed || !done.runCompleted) throw new Error(`run ${runId} did not complete: ${JSON.stringify(done)}`);
  };
  try {
    const waits = sampleWaits(ctx.stack.databaseUrl);
    const result = await closedLoop(ctx, phase, { clients: STORE_CLIENTS, seconds: ctx.scale(10, 4) }, once);
    const lines = await waits.stop();
    ctx.say(`${result.perSecond.toFixed(0)} runs/s, latency ${result.latency.summary()}`);
    ctx.say(`Postgres, what active connections wait for (${lines[0]}):`);
    for (const line of lines.slice(1)) ctx.say(`  ${line}`);
    return { rate: result.perSecond, waits: lines };
  } finally {
    await database.close();
  }
}

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
    const accounts: SeededAccount[] = [];
    for (let i = 0; i < ORGANIZATIONS; i++) accounts.push(await seedAccount(service.prisma, { slug: `bench-store-org-${i}`, scopes: ['run'], balanceMicros: 1_000_000_000 }));
    ctx.say(`the run store alone (${STORE_CLIENTS} concurrent 1-step runs: stored holding, committed, settled), ${ORGANIZATIONS} organizations:`);
    const storeSpread = await storeRate(ctx, 'B5 store, fifty organizations', accounts);
    ctx.say('the run store alone, one organization:');
    const storeOne = await storeRate(ctx, 'B5 store, one organization', accounts.slice(0, 1));
    const rows: Row[] = [
      { id: 'B5', figure: 'sustained runs/s, one organization', ours: oneRate, unit: '/s', kind: 'rate', peer: { name: `ours, ${ORGANIZATIONS} organizations`, value: spreadRate }, goal: atLeast('≥ 80% of fifty', oneRate / Math.max(spreadRate, 1e-9), 0.8) },
      { id: 'B5', figure: `run store alone, runs/s, one organization (${STORE_CLIENTS} at once)`, ours: storeOne.rate, unit: '/s', kind: 'rate', peer: { name: `ours, ${ORGANIZATIONS} organizations`, value: storeSpread.rate }, goal: atLeast('≥ 80% of fifty', storeOne.rate / Math.max(storeSpread.rate, 1e-9), 0.8) },
    ];
    return rows;
  },
};
