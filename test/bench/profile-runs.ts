/**
 * A CPU profile of the service under load (measure first): the whole service in this
 * process (ROLE=all), `BENCH_CLIENTS` clients looping 1-node runs for `BENCH_SECONDS`, on the
 * bench stack (fsync on). Run under `node --cpu-prof` (make profile writes .test-artifacts/profile);
 * deploy/local/profile-summary.cjs prints where the time went, by function and by package.
 * Not a *.bench.ts: make bench does not run it.
 */
import { dbCalls, redisCalls, type DbCall, type RedisCall } from '../../services/platform/call-channels';
import { createRedisConnection } from '../../services/queue';
import { withBenchService } from './support/context';
import { closedLoop, sequential } from './support/load';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from './support/service-client';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);

async function main(): Promise<void> {
  await withBenchService(async (ctx, service) => {
    const body = JSON.stringify(ONE_NODE);
    // What one run asks of Postgres and Redis (this process' calls: API, worker and their background work).
    const counts = new Map<string, number>();
    const onDb = (m: unknown) => counts.set(`pg ${(m as DbCall).operation}`, (counts.get(`pg ${(m as DbCall).operation}`) ?? 0) + 1);
    const onRedis = (m: unknown) => counts.set(`redis ${(m as RedisCall).command}`, (counts.get(`redis ${(m as RedisCall).command}`) ?? 0) + 1);
    await sequential(ctx, 'warm-up', 0, 50, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    // Redis' MONITOR names each script call by its key count and first two keys (ids made generic).
    const monitored = createRedisConnection(ctx.stack.redisUrl);
    const monitor = await monitored.monitor();
    const scripts = new Map<string, number>();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() !== 'evalsha') return;
      const key = [args[2], args[3], args[4]].join(' ').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/:\d+$/, ':<n>');
      scripts.set(key, (scripts.get(key) ?? 0) + 1);
    });
    dbCalls.subscribe(onDb);
    redisCalls.subscribe(onRedis);
    const sample = 200;
    await sequential(ctx, 'counted', 0, sample, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    dbCalls.unsubscribe(onDb);
    redisCalls.unsubscribe(onRedis);
    monitor.disconnect();
    monitored.disconnect();
    console.log(`scripts (evalsha) per run, by key count and first keys: ${[...scripts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / sample).toFixed(2)}`).join(', ')}`);
    const perRun = [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / sample).toFixed(2)}`);
    console.log(`calls per 1-node run (sequential, ${sample} runs): ${perRun.join(', ')}`);
    const result = await closedLoop(ctx, 'profile', { clients: CLIENTS, seconds: SECONDS }, () => runOnce(service, body, ONE_NODE_OUTPUTS));
    console.log(`${CLIENTS} clients: ${result.perSecond.toFixed(0)} runs/s, latency ${result.latency.summary()}, ${result.cpuMicrosPerCall.toFixed(0)} µs CPU per run (this process)`);
  });
}

void main();
