/**
 * What one run asks of Postgres under B4's open loop (`make pg-per-run`): the CPU of each kind of
 * Postgres process, each SQL function's time (track_functions), the rows each table gained or
 * changed, the statements that took the most time, functions' own statements included
 * (pg_stat_statements, preloaded for this stack when the server has it), and the WAL written, by
 * record type (pg_waldump), all per run, on the bench stack (fsync on). Not a *.bench.ts: make
 * bench does not run it. RATE (default 100/s) and SECONDS (default 6) set the load.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { serverDir } from '../support/local-servers';
import { withBenchService } from './support/context';
import { openLoop } from './support/load';
import { postgresCpuByKind } from './support/process-cpu';
import { ONE_NODE, ONE_NODE_OUTPUTS, runOnce } from './support/service-client';

const RATE = Number(process.env.RATE ?? 100);
const SECONDS = Number(process.env.SECONDS ?? 6);

/** Where Debian's packages put the server's modules: pg_stat_statements is one of them (postgresql-NN). */
const statementsModule = ['17', '16', '15', '14', '13'].map((v) => `/usr/lib/postgresql/${v}/lib/pg_stat_statements.so`).find((f) => existsSync(f));
// deploy/local/postgres.sh passes PG_OPTIONS to the server the bench stack starts.
if (statementsModule) process.env.PG_OPTIONS = '-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all';

void withBenchService(async (ctx, service) => {
  const body = JSON.stringify(ONE_NODE);
  const once = () => runOnce(service, body, ONE_NODE_OUTPUTS);
  const admin = new pg.Client({ connectionString: ctx.stack.databaseUrl });
  await admin.connect();
  const value = async (sql: string): Promise<string> => String(Object.values((await admin.query(sql)).rows[0] as object)[0]);
  await admin.query(`ALTER SYSTEM SET track_functions = 'all'`);
  await admin.query('SELECT pg_reload_conf()');
  await openLoop(ctx, 'warm-up', { rate: RATE, seconds: 3 }, once);
  if (statementsModule) {
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await admin.query('SELECT pg_stat_statements_reset()');
  }
  await admin.query('SELECT pg_stat_reset()');
  const runsBefore = Number(await value('SELECT count(*) FROM runs'));
  const lsnBefore = await value('SELECT pg_current_wal_insert_lsn()');
  const cpuBefore = postgresCpuByKind(ctx.stack.tmpDir);
  const result = await openLoop(ctx, 'measured', { rate: RATE, seconds: SECONDS }, once);
  const cpuAfter = postgresCpuByKind(ctx.stack.tmpDir);
  const lsnAfter = await value('SELECT pg_current_wal_insert_lsn()');
  const runs = Number(await value('SELECT count(*) FROM runs')) - runsBefore;
  const per = (n: number) => (n / runs).toFixed(2);
  console.log(`${runs} runs at ${RATE}/s (p99 ${result.latency.percentile(99).toFixed(1)} ms); per run:`);
  const byKind = new Map<string, number>();
  for (const [pid, p] of cpuAfter) byKind.set(p.kind, (byKind.get(p.kind) ?? 0) + p.ms - (cpuBefore.get(pid)?.ms ?? 0));
  for (const [kind, ms] of [...byKind].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1])) console.log(`  CPU ${kind}: ${((ms * 1000) / runs).toFixed(0)} µs`);
  // The statistics collector publishes a backend's counts when it goes idle, at most every 500 ms.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const functions = await admin.query(`SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions WHERE calls > 0 ORDER BY total_time DESC LIMIT 10`);
  for (const f of functions.rows) console.log(`  function ${f.funcname}: ${per(Number(f.calls))} calls, ${((Number(f.total_time) * 1000) / Number(f.calls)).toFixed(0)} µs each (${((Number(f.self_time) * 1000) / Number(f.calls)).toFixed(0)} µs its own)`);
  const tables = await admin.query(`SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd > 0 ORDER BY relname`);
  for (const t of tables.rows) console.log(`  table ${t.relname}: ${per(Number(t.n_tup_ins))} inserted, ${per(Number(t.n_tup_upd))} updated (${per(Number(t.n_tup_hot_upd))} HOT)`);
  if (statementsModule) {
    // Statement time is wall time (waits for locks and I/O included); a function's call includes its own statements'.
    const statements = await admin.query(`SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS text FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 16`);
    for (const r of statements.rows) console.log(`  statement ${per(Number(r.calls))} calls, ${((Number(r.total_exec_time) * 1000) / runs).toFixed(0)} µs per run: ${r.text}`);
  } else console.log('  statements: pg_stat_statements is not installed beside this Postgres');
  await admin.query('CHECKPOINT');
  const waldump = '/usr/lib/postgresql/' + (await value("SELECT current_setting('server_version_num')::int / 10000")) + '/bin/pg_waldump';
  const stats = execFileSync(waldump, ['-p', path.join(serverDir.postgres(ctx.stack.tmpDir), 'pg_wal'), '-s', lsnBefore, '-e', lsnAfter, '--stats=record'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  for (const line of stats.split('\n')) {
    const m = /^(\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)/.exec(line);
    if (m && Number(m[2]) >= runs / 10) console.log(`  WAL ${m[1]}: ${per(Number(m[2]))} records, ${(Number(m[3]) / runs + Number(m[4]) / runs).toFixed(0)} bytes`);
    const total = /^Total\s+(\d+)\s+(\d+)/.exec(line);
    if (total) console.log(`  WAL in all: ${per(Number(total[1]))} records, ${(Number(total[2]) / runs).toFixed(0)} bytes`);
  }
  await admin.end();
});
