import { performance } from 'node:perf_hooks';
import { createMetrics } from '../../../services/platform/metrics';
import { inSpan } from '../../../services/platform/tracing';
import { createRedisConnection } from '../../../services/queue';
import { createDatabase } from '../../../services/store';
import type { BenchContext, Workload } from '../support/context';
import type { Row } from '../support/report';

/**
 * B9: what the always-on instrumentation costs per call (the metric and trace hooks). Every Redis command and Postgres statement of a service is timed (two
 * clock reads, one diagnostics-channel publish, one histogram observation: metrics.ts'
 * `observeCalls`), and every operation call runs in a span (a no-op tracer unless
 * OTEL_TRACES_EXPORTER is set). Measured here on the bench stack's Redis and Postgres: the CPU
 * of this process per call, with the service's subscribers attached and without (nothing
 * listening: one boolean check), alternating rounds so that drift hits both alike.
 *
 * Redis calls go out 200 at a time (so the CPU per call is the client's, not idle waits);
 * Postgres statements one at a time on a pool of one (`SELECT 1`).
 */
const ROUNDS = 6;

/** CPU microseconds of this process per call of `call`, `count` calls `batch` at a time. */
async function cpuPerCall(count: number, batch: number, call: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  for (let done = 0; done < count; done += batch) await Promise.all(Array.from({ length: Math.min(batch, count - done) }, call));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / count;
}

/** The median of `rounds` alternating measurements with the hooks attached (`on`) and not (`off`). */
async function onAndOff(rounds: number, measure: () => Promise<number>): Promise<{ on: number; off: number }> {
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const metrics = createMetrics({ role: 'bench' });
    const stop = metrics.observeCalls();
    on.push(await measure());
    stop();
    off.push(await measure());
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return { on: median(on), off: median(off) };
}

async function spanCost(ctx: BenchContext): Promise<{ on: number; off: number }> {
  const count = ctx.scale(200_000, 50_000);
  const work = async () => 1;
  const time = async (call: () => Promise<unknown>) => {
    const started = performance.now();
    for (let i = 0; i < count; i++) await call();
    return ((performance.now() - started) * 1000) / count;
  };
  await time(() => inSpan('bench', {}, work));
  // Without an SDK registered (the default), the tracer is the API's no-op one.
  return { on: await time(() => inSpan('bench', {}, work)), off: await time(work) };
}

export const b9: Workload = {
  id: 'B9',
  title: 'instrumentation: the always-on timing hooks and spans, per call',
  async run(ctx) {
    const redis = createRedisConnection(ctx.stack.redisUrl);
    const database = createDatabase(ctx.stack.databaseUrl, { poolSize: 1 });
    try {
      await redis.set('svcbench:b9', 'x');
      const redisCount = ctx.scale(100_000, 20_000);
      const pgCount = ctx.scale(10_000, 2_000);
      await cpuPerCall(redisCount / 4, 200, () => redis.get('svcbench:b9'));
      const onRedis = await onAndOff(ROUNDS, () => cpuPerCall(redisCount, 200, () => redis.get('svcbench:b9')));
      ctx.say(`Redis GET, 200 at a time: ${onRedis.on.toFixed(2)} µs CPU per call timed, ${onRedis.off.toFixed(2)} µs untimed`);
      await cpuPerCall(pgCount / 4, 1, () => database.pool.query('SELECT 1'));
      const onPg = await onAndOff(ROUNDS, () => cpuPerCall(pgCount, 1, () => database.pool.query('SELECT 1')));
      ctx.say(`Postgres SELECT 1, one at a time: ${onPg.on.toFixed(2)} µs CPU per call timed, ${onPg.off.toFixed(2)} µs untimed`);
      const spans = await spanCost(ctx);
      ctx.say(`a call in a span (no exporter): ${spans.on.toFixed(3)} µs, without: ${spans.off.toFixed(3)} µs`);
      const rows: Row[] = [
        { id: 'B9', figure: 'Redis command, CPU per call, timed', ours: onRedis.on, unit: 'µs', kind: 'time', peer: { name: 'untimed', value: onRedis.off } },
        { id: 'B9', figure: 'Postgres statement, CPU per call, timed', ours: onPg.on, unit: 'µs', kind: 'time', peer: { name: 'untimed', value: onPg.off } },
        { id: 'B9', figure: 'operation call in a span (no exporter)', ours: spans.on, unit: 'µs', kind: 'time', peer: { name: 'no span', value: spans.off } },
      ];
      return rows;
    } finally {
      await redis.del('svcbench:b9');
      redis.disconnect();
      await database.close();
    }
  },
};
