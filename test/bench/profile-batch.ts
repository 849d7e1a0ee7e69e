/**
 * What one batch row asks of the stack (measure first): a batch of B1's one-node workflow
 * (`ROWS`, default 2,000; `concurrency` 1,000, as B14) on the bench stack (fsync on), the service
 * in this process (ROLE=all). Prints this process' Postgres operations and Redis commands per row,
 * the scripts Redis ran per row, the Postgres statements that took the most time per row
 * (pg_stat_statements where the server has it), and the stack's CPU per row. Run under
 * `node --cpu-prof` (make profile-batch) for where this process' time went. `MONITOR=0`: no
 * MONITOR (which costs Redis and this process CPU of its own), for rows/s and CPU per row alone.
 * Not a *.bench.ts.
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { dbCalls, redisCalls, type DbCall, type RedisCall } from '../../services/platform/call-channels';
import { createRedisConnection } from '../../services/queue';
import { withBenchService } from './support/context';
import { cpuBetween, stackCpu } from './support/process-cpu';
import { batchEnd, startBatch } from './workloads/b14-batches';

const ROWS = Number(process.env.ROWS ?? 2_000);

const statementsModule = ['17', '16', '15', '14', '13'].map((v) => `/usr/lib/postgresql/${v}/lib/pg_stat_statements.so`).find((f) => existsSync(f));
if (statementsModule) process.env.PG_OPTIONS = '-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all';

async function runBatch(url: string, token: string, rows: number): Promise<number> {
  const started = performance.now();
  const end = await batchEnd(url, token, await startBatch(url, token, rows), 600_000);
  if (end.rows.completed !== rows) throw new Error(`${end.rows.completed} of ${rows} rows completed`);
  return (performance.now() - started) / 1000;
}

void withBenchService(async (ctx, service) => {
  const token = service.account.token;
  const admin = new pg.Client({ connectionString: ctx.stack.databaseUrl });
  await admin.connect();
  await runBatch(service.url, token, 200); // warm-up
  if (statementsModule) {
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await admin.query('SELECT pg_stat_statements_reset()');
  }
  const counts = new Map<string, number>();
  const onDb = (m: unknown) => counts.set(`pg ${(m as DbCall).operation}`, (counts.get(`pg ${(m as DbCall).operation}`) ?? 0) + 1);
  const onRedis = (m: unknown) => counts.set(`redis ${(m as RedisCall).command}`, (counts.get(`redis ${(m as RedisCall).command}`) ?? 0) + 1);
  const monitored = createRedisConnection(ctx.stack.redisUrl);
  const monitor = process.env.MONITOR === '0' ? undefined : await monitored.monitor();
  const scripts = new Map<string, number>();
  monitor?.on('monitor', (_time: string, args: string[]) => {
    const command = args[0]?.toLowerCase();
    if (command !== 'evalsha') {
      scripts.set(command ?? '?', (scripts.get(command ?? '?') ?? 0) + 1);
      return;
    }
    const key = [args[2], args[3], args[4]].join(' ').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/:\d+$/, ':<n>');
    scripts.set(key, (scripts.get(key) ?? 0) + 1);
  });
  dbCalls.subscribe(onDb);
  redisCalls.subscribe(onRedis);
  const before = stackCpu(ctx.stack);
  const seconds = await runBatch(service.url, token, ROWS);
  const used = cpuBetween(before, stackCpu(ctx.stack));
  dbCalls.unsubscribe(onDb);
  redisCalls.unsubscribe(onRedis);
  monitor?.disconnect();
  monitored.disconnect();
  const per = (n: number) => (n / ROWS).toFixed(2);
  const ms = (s: number) => ((s * 1000) / ROWS).toFixed(2);
  console.log(`${ROWS} rows in ${seconds.toFixed(1)} s: ${(ROWS / seconds).toFixed(0)} rows/s; CPU per row ${ms(used.self + used.postgres + used.redis)} ms (process ${ms(used.self)}, Postgres ${ms(used.postgres)}, Redis ${ms(used.redis)})`);
  console.log(`this process' calls per row: ${[...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${per(n)}`).join(', ')}`);
  console.log(`Redis commands per row (MONITOR; scripts by key count and first keys): ${[...scripts].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, n]) => `${k} ${per(n)}`).join(', ')}`);
  if (statementsModule) {
    await sleep(1000);
    const statements = await admin.query(`SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS text FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20`);
    for (const r of statements.rows) console.log(`  statement ${per(Number(r.calls))} calls, ${((Number(r.total_exec_time) * 1000) / ROWS).toFixed(0)} µs per row: ${r.text}`);
  }
  await admin.end();
});
