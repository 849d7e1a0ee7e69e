/**
 * What a 1-node run's SQL asks of Postgres, in instructions (`make pg-instructions`): the service's
 * own statements for a run (hot-sql.ts: the creation and the completion, each as the service sends
 * it) replayed by one Postgres backend in single-user mode under Valgrind's callgrind, which counts
 * the instructions it executes. Unlike CPU time on this shared VM (10-20% apart from one run to the
 * next), the count repeats to about 0.2%, so a change of a few percent in the SQL functions shows
 * (docs/performance/postgres.md, Instructions per run). Network, the other processes and the
 * disk are left out: fsync is off, and the flush's own transaction is counted, not its wait.
 *
 * Two paths, as hot-sql.ts calls a function: alone (one simple query with the call, COMMIT and the
 * flush: a sequential run, B1) and beside others (its named statement, planned once per
 * connection, the flush shared with the calls in flight and left out here: B4 under load); and,
 * for the ratio, the design floor's INSERT and UPDATE (support/design-floor.ts). Each is
 * the difference between WARM + COUNT runs and WARM runs, each replayed on a fresh copy of the same
 * migrated cluster, seeded with an organization and HISTORY finished runs (analyzed), so the
 * backend's start and first plans fall out. Needs valgrind
 * (`apt-get install valgrind`). Not a *.bench.ts: make bench does not run it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { flushedCallText, namedCall, type CompleteStepsArgs, type CreateRunsArgs, type FunctionName } from '../../services/store/hot-sql';
import { applyMigrations } from '../../services/store/migration-runner';
import { jsonParam } from '../../services/store/run-records';
import { freePorts, serverDir, startPostgres, stopPostgres } from '../support/local-servers';
import { FLOOR_SQL } from './support/design-floor';
import { ONE_NODE } from './support/service-client';

const WARM = 30;
const COUNT = Number(process.env.COUNT ?? 300);
const HISTORY = 5_000;

const DATABASE = 'svc_instructions';
const ORG = '00000000-0000-4000-8000-00000000000a';
const USER = '00000000-0000-4000-8000-00000000000b';
const TOKEN = '00000000-0000-4000-8000-00000000000c';

/** The newest installed PostgreSQL's binaries (or $PG_BIN_DIR), as deploy/local/lib.sh finds them. */
function postgresBinDir(): string {
  if (process.env.PG_BIN_DIR && fs.existsSync(path.join(process.env.PG_BIN_DIR, 'postgres'))) return process.env.PG_BIN_DIR;
  const versions = fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => `/usr/lib/postgresql/${v}/bin`).find((dir) => fs.existsSync(path.join(dir, 'postgres')));
  if (!found) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql (set PG_BIN_DIR)');
  return found;
}

/** One run's two calls' arguments, as the service makes them for ONE_NODE (its first step reserved with it). */
function runCalls(): { create: CreateRunsArgs; complete: CompleteStepsArgs } {
  const runId = randomUUID();
  const token = `attempt-${randomUUID()}`;
  const create: CreateRunsArgs = {
    org_id: ORG,
    runs: [{ user_id: USER, token_id: TOKEN, workflow_id: null, workflow_version_id: null, definition: ONE_NODE.workflow, inputs: {}, cap_micros: 1_000_000, status: 'running', require_credit: true, reserved_micros: 10, run_id: runId, steps: [{ node_id: 'sum', pending_deps: 0, token, reserved_micros: 10 }] }],
  };
  const complete: CompleteStepsArgs = {
    commits: [{ run_id: runId, node_id: 'sum', attempt_token: token, cost_micros: 10, output: { result: { kind: 'float', value: 3 } }, ms: 0, dependents: [], run_outputs: { out: { kind: 'float', value: 3 } }, next_node_id: null, next_estimate_micros: null, next_attempt_token: null, followers: null, lease: false }],
  };
  return { create, complete };
}

type Path = 'alone' | 'named' | 'floor';
const NAMED: FunctionName[] = ['svc_create_runs', 'svc_complete_steps'];

/** The statements of `runs` runs, one per line (single-user mode ends a query at a newline). */
function script(runs: number, via: Path, calls: 'both' | 'create'): string {
  const lines = via === 'named' ? NAMED.map((name) => `PREPARE ${namedCall(name).name}(jsonb) AS ${namedCall(name).text}`) : [];
  for (let i = 0; i < runs; i++) {
    if (via === 'floor') {
      // The design floor's two autocommitted statements, parsed and planned each time as its pool sends them.
      const id = randomUUID();
      lines.push(withLiterals(FLOOR_SQL.insert, [id, JSON.stringify(ONE_NODE)]));
      if (calls === 'both') lines.push(withLiterals(FLOOR_SQL.complete, [id, JSON.stringify({ out: { kind: 'float', value: 3 } })]));
      continue;
    }
    const { create, complete } = runCalls();
    const made: [FunctionName, unknown][] = calls === 'both' ? [['svc_create_runs', create], ['svc_complete_steps', complete]] : [['svc_create_runs', create]];
    for (const [name, args] of made) {
      const json = jsonParam(args, name);
      lines.push(via === 'alone' ? flushedCallText(name, json) : `EXECUTE ${namedCall(name).name}(${pg.escapeLiteral(json)})`);
    }
  }
  return lines.join('\n') + '\n';
}

/** A parameterized statement with its parameters written in as quoted literals (single-user mode takes no parameters). */
function withLiterals(text: string, values: string[]): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => pg.escapeLiteral(values[Number(n) - 1]!));
}

const asPostgres = (command: string[]): string[] => (process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...command] : command);

/** Instructions one backend executes for `text`, on a fresh copy of the seeded cluster. */
function instructions(bin: string, work: string, seeded: string, text: string): number {
  const data = path.join(work, 'data');
  fs.rmSync(data, { recursive: true, force: true });
  execFileSync('cp', ['-a', seeded, data]);
  const input = path.join(work, 'statements.sql');
  fs.writeFileSync(input, text);
  const out = path.join(work, 'callgrind.out');
  fs.rmSync(out, { force: true });
  const command = asPostgres(['valgrind', '--tool=callgrind', `--callgrind-out-file=${out}`, path.join(bin, 'postgres'), '--single', '-D', data, '-c', 'fsync=off', '-c', 'synchronous_commit=off', DATABASE]);
  const run = spawnSync(command[0]!, command.slice(1), { stdio: [fs.openSync(input, 'r'), 'ignore', 'pipe'], encoding: 'utf8', maxBuffer: 64 << 20 });
  const errors = run.stderr.split('\n').filter((line) => /\b(ERROR|FATAL|PANIC):/.test(line));
  if (run.status !== 0 || errors.length > 0) throw new Error(`postgres --single under valgrind failed (status ${run.status}):\n${errors.slice(0, 5).join('\n') || run.stderr.slice(-2000)}`);
  // KEEP=1 keeps each replay's profile for callgrind_annotate (in .test-artifacts/pg-instructions).
  if (process.env.KEEP) {
    const kept = path.resolve('.test-artifacts/pg-instructions');
    fs.mkdirSync(kept, { recursive: true });
    fs.copyFileSync(out, path.join(kept, `callgrind.${text.length}.out`));
  }
  const totals = /^(?:totals|summary): (\d+)/m.exec(fs.readFileSync(out, 'utf8'));
  if (!totals) throw new Error(`no instruction total in ${out}`);
  return Number(totals[1]);
}

/**
 * STATEMENTS=1: the alone path's statements, functions' own included, by their time under
 * Valgrind (about in proportion to their instructions), from pg_stat_statements: where to look.
 */
function printStatements(bin: string, work: string, seeded: string): void {
  const module = path.join(path.dirname(bin), 'lib', 'pg_stat_statements.so');
  if (!fs.existsSync(module)) {
    console.log(`STATEMENTS: ${module} is not installed`);
    return;
  }
  const data = path.join(work, 'data');
  fs.rmSync(data, { recursive: true, force: true });
  execFileSync('cp', ['-a', seeded, data]);
  const report = `SELECT 'statement|' || calls || '|' || round((total_exec_time + total_plan_time)::numeric / ${COUNT}, 3) || '|' || left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 25`;
  const text = ['CREATE EXTENSION IF NOT EXISTS pg_stat_statements', script(WARM, 'alone', 'both').trim(), 'SELECT pg_stat_statements_reset()', script(COUNT, 'alone', 'both').trim(), report].join('\n') + '\n';
  const input = path.join(work, 'statements.sql');
  fs.writeFileSync(input, text);
  const command = asPostgres(['valgrind', '--tool=none', path.join(bin, 'postgres'), '--single', '-D', data, '-c', 'fsync=off', '-c', 'synchronous_commit=off',
    '-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'pg_stat_statements.track_planning=on', DATABASE]);
  const run = spawnSync(command[0]!, command.slice(1), { stdio: [fs.openSync(input, 'r'), 'pipe', 'ignore'], encoding: 'utf8', maxBuffer: 256 << 20 });
  console.log('statements of the alone path, ms per run under Valgrind (calls in all; functions include their statements):');
  for (const match of run.stdout.matchAll(/"statement\|([^"]*)"/g)) {
    const [calls, ms, query] = match[1]!.split('|');
    console.log(`  ${ms!.padStart(8)}  ${calls!.padStart(6)}  ${query}`);
  }
}

async function main(): Promise<void> {
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    console.error('make pg-instructions needs valgrind: apt-get install valgrind');
    process.exit(2);
  }
  const bin = postgresBinDir();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pg-instructions-'));
  fs.chmodSync(work, 0o777);
  const [port] = await freePorts(1);
  try {
    await startPostgres(work, port!);
    const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${DATABASE}`);
    await admin.end();
    const url = `postgresql://postgres@127.0.0.1:${port}/${DATABASE}`;
    await applyMigrations({ connectionString: url });
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(`INSERT INTO organizations (id, slug, name, balance_micros) VALUES ($1, 'bench', 'Bench', 1000000000000)`, [ORG]);
    await db.query(`INSERT INTO users (id, email, name) VALUES ($1, 'bench@example.com', 'Bench')`, [USER]);
    await db.query(`INSERT INTO access_tokens (id, user_id, org_id, name, display_prefix, token_hash, kind) VALUES ($1, $2, $3, 'bench', 'svc_bench', 'bench', 'personal')`, [TOKEN, USER, ORG]);
    // Finished runs before the counted ones, and statistics on them: the planner then sees tables
    // as a running service's are (empty ones analyzed lead it to other plans).
    for (let i = 0; i < HISTORY; i++) {
      const { create, complete } = runCalls();
      await db.query(namedCall('svc_create_runs').text, [jsonParam(create, 'svc_create_runs')]);
      await db.query(namedCall('svc_complete_steps').text, [jsonParam(complete, 'svc_complete_steps')]);
    }
    await db.query(FLOOR_SQL.table);
    for (let i = 0; i < HISTORY; i++) await db.query(`INSERT INTO bench_floor_runs (id, body, status, outputs) VALUES ($1, $2, 'completed', '{}')`, [randomUUID(), JSON.stringify(ONE_NODE)]);
    await db.query('VACUUM ANALYZE');
    await db.end();
    await stopPostgres(work, port!);
    const seeded = serverDir.postgres(work);
    const perRun = (via: Path, calls: 'both' | 'create') => (instructions(bin, work, seeded, script(WARM + COUNT, via, calls)) - instructions(bin, work, seeded, script(WARM, via, calls))) / COUNT;
    if (process.env.STATEMENTS) printStatements(bin, work, seeded);
    console.log(`PostgreSQL ${path.basename(path.dirname(bin))}, one backend, ${COUNT} runs (after ${WARM}); instructions per 1-node run:`);
    const labels = { alone: 'alone (simple query with COMMIT and flush; B1)', named: 'beside others (named statements, flush shared; B4)', floor: 'the design floor (an INSERT and an UPDATE)' };
    const totals = new Map<Path, number>();
    for (const via of ['alone', 'named', 'floor'] as const) {
      const both = perRun(via, 'both');
      const create = perRun(via, 'create');
      totals.set(via, both);
      console.log(`  ${labels[via]}: ${(both / 1e6).toFixed(3)} M (creation ${(create / 1e6).toFixed(3)} M, completion ${((both - create) / 1e6).toFixed(3)} M)`);
    }
    console.log(`  ours ÷ floor: ${(totals.get('alone')! / totals.get('floor')!).toFixed(2)}× alone, ${(totals.get('named')! / totals.get('floor')!).toFixed(2)}× beside others`);
  } finally {
    await stopPostgres(work, port!).catch(() => undefined);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
