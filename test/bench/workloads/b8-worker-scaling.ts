import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { applyMigrations } from '../../../services/store/migration-runner';
import { createPrismaClient } from '../../../services/store';
import { serviceProcess, type ServiceProcess } from '../../faults/support/service-process';
import { databaseUrl, onServer } from '../../support/database';
import { benchServiceEnv } from '../../support/bench-stack';
import { seedAccount, type SeededAccount } from '../../support/fixtures';
import { freePorts } from '../../support/local-servers';
import type { BenchContext, Workload } from '../support/context';
import { atLeast, type Row } from '../support/report';
import { countMultixacts, sampleWaits } from '../support/pg-waits';
import { mathChain, runOnce } from '../support/service-client';

/** Steps per run: a 10-node math chain, so the work is in the workers, not the API. */
const CHAIN = 10;
/** Step jobs one worker process runs at once (the service's default). */
const CONCURRENCY = 16;
/** Runs in flight per worker process: two per worker slot keeps every slot busy while runs start and end. */
const CLIENTS_PER_WORKER = 2 * CONCURRENCY;
/** The suite's speed-up goals, by worker count. */
const GOALS: Record<number, number> = { 2: 1.8, 8: 6 };

/**
 * API processes in front of the workers (BENCH_API_PROCESSES, default 1), the same in every
 * phase; the clients share them out. One API process admits about 500 runs/s (B7), so on a
 * machine with the cores for 8 workers one API would be what is measured, not the workers.
 */
function apiProcesses(): number {
  return Math.max(1, Number(process.env.BENCH_API_PROCESSES ?? 1) || 1);
}

/** 1, 2, then doubling up to BENCH_MAX_WORKERS (default 2), and that number itself. */
function workerCounts(): number[] {
  const max = Math.max(1, Number(process.env.BENCH_MAX_WORKERS ?? 2) || 2);
  const counts = [1];
  for (let k = 2; k <= max; k *= 2) counts.push(k);
  if (counts[counts.length - 1] !== max) counts.push(max);
  return counts;
}

/** CPU seconds a process has used so far (Linux /proc; NaN elsewhere or once it is gone). */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, fields 14 and 15 of stat (11 and 12 after the command's closing parenthesis).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Each process's share of one core over a phase, so a reader can see whether the workers are what is busy. */
function cpuShares(processes: readonly ServiceProcess[]): () => string {
  const client = process.cpuUsage();
  const before = processes.map((p) => cpuSeconds(p.pid));
  const started = performance.now();
  return () => {
    const wall = (performance.now() - started) / 1000;
    const used = process.cpuUsage(client);
    const shares = processes.map((p, i) => `${p.name} ${((100 * (cpuSeconds(p.pid) - before[i]!)) / wall).toFixed(0)}%`);
    return [...shares, `bench client ${((100 * (used.user + used.system)) / 1e6 / wall).toFixed(0)}%`].join(', ');
  };
}

interface ClosedLoopResult {
  /** Runs completed per second of the measured window. */
  rate: number;
  completed: number;
  failed: number;
}

/**
 * Closed loop: `clients` loops each starting its next run as soon as its last one ended, for
 * `warmupS` (not counted) and then `seconds`; the rate counts the runs that ended in the measured
 * window. Every run is awaited before it returns, so the queue is empty for the next phase.
 */
async function closedLoop(ctx: BenchContext, phase: string, options: { clients: number; warmupS: number; seconds: number }, once: (client: number) => Promise<unknown>): Promise<ClosedLoopResult> {
  const start = performance.now();
  const measuredFrom = start + options.warmupS * 1000;
  const measuredTo = measuredFrom + options.seconds * 1000;
  let completed = 0;
  let failed = 0;
  const client = async (index: number) => {
    while (performance.now() < measuredTo) {
      try {
        await once(index);
        const now = performance.now();
        if (now >= measuredFrom && now < measuredTo) completed++;
      } catch (err) {
        const measured = performance.now() >= measuredFrom;
        if (measured) failed++;
        ctx.fail(measured ? phase : `${phase} (warm-up)`, err);
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, (_, i) => client(i)));
  return { rate: completed / options.seconds, completed, failed };
}

/**
 * The service as separate OS processes on the bench stack's Redis and Postgres: one API
 * (ROLE=api) and worker processes (ROLE=worker) started and stopped per phase, each
 * `workers/serve.ts` as production runs it (test/faults/support/service-process.ts). Its own
 * database (migrated here) and Redis prefix, so the shared in-process service of the other
 * workloads, idle but still running its reaper, never sees these runs.
 */
async function startProcesses(ctx: BenchContext, dir: string): Promise<{ apis: ServiceProcess[]; account: SeededAccount; env: Record<string, string>; logDir: string; url: string; close(): Promise<void> }> {
  const database = `svc_bench_b8_${Date.now()}`;
  await onServer(ctx.stack.postgres, `CREATE DATABASE ${database}`);
  const url = databaseUrl(ctx.stack.postgres, database);
  await applyMigrations({ connectionString: url });
  const prisma = createPrismaClient(url);
  let account: SeededAccount;
  try {
    // 1,000 USD: a step costs 1 micro-USD.
    account = await seedAccount(prisma, { slug: 'bench-b8', scopes: ['read', 'run'], balanceMicros: 1_000_000_000 });
  } finally {
    await prisma.$disconnect();
  }
  const ports = await freePorts(apiProcesses());
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: url,
    REDIS_URL: ctx.stack.redisUrl,
    REDIS_PREFIX: 'svcb8',
    BLOB_DRIVER: 'fs',
    BLOB_DIR: path.join(dir, 'blobs'),
    DATA_DIR: dir,
    BLOB_SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef',
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}`,
    // info, not silent: the processes' readiness is read from their log ("API listening",
    // "step worker started"); at info the API writes one line per run and the workers none per step.
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: String(CONCURRENCY),
    RATE_LIMIT_TOKEN_PER_MINUTE: '10000000',
    RATE_LIMIT_IP_PER_MINUTE: '10000000',
    MAX_OPEN_STREAMS_PER_ORG: '1000000',
    ...benchServiceEnv(),
  };
  const logDir = path.join(dir, 'logs');
  fs.mkdirSync(logDir, { recursive: true });
  const apis = ports.map((port, i) => serviceProcess({ name: ports.length > 1 ? `api-${i + 1}` : 'api', role: 'api', port, env, logDir }));
  await Promise.all(apis.map((api) => api.start()));
  return { apis, account, env, logDir, url, close: async () => void (await Promise.all(apis.map((api) => api.kill()))) };
}

/** The error-level lines (pino level 50 and up) of the processes' logs, shortened. */
function errorLines(logDir: string): string[] {
  return fs
    .readdirSync(logDir)
    .flatMap((file) => fs.readFileSync(path.join(logDir, file), 'utf8').split('\n'))
    .filter((line) => /"level":(50|60)/.test(line))
    .map((line) => line.slice(0, 1500));
}

export const b8: Workload = {
  id: 'B8',
  title: `worker scaling: 1 → ${workerCounts().slice(-1)[0]} worker processes (${apiProcesses() === 1 ? 'one API process' : `${apiProcesses()} API processes`}, ${CHAIN}-node math chains, closed loop)`,
  async run(ctx) {
    const cpus = os.cpus().length;
    const warmupS = ctx.scale(10, 3);
    const seconds = ctx.scale(30, 8);
    const dir = fs.mkdtempSync(path.join(ctx.stack.tmpDir, 'b8-'));
    const { body: chain, outputs } = mathChain(CHAIN);
    const body = JSON.stringify(chain);
    // On a 2-core machine the API, Postgres, Redis and this client share the cores with the
    // workers, so adding a worker process adds no core of its own: the ratio is bounded by the
    // machine, not by the service. The issue's ≥ 6× at 8 assumes a 16-core machine.
    ctx.say(`${cpus} CPUs; ${CONCURRENCY} step slots per worker, ${CLIENTS_PER_WORKER} clients per worker; ${warmupS} s warm-up, ${seconds} s measured per step`);
    const stack = await startProcesses(ctx, dir);
    const services = stack.apis.map((api) => ({ url: api.url!, account: stack.account }));
    const rates = new Map<number, number>();
    const rows: Row[] = [];
    try {
      for (const k of workerCounts()) {
        const workers = Array.from({ length: k }, (_, i) => serviceProcess({ name: `worker-k${k}-${i + 1}`, role: 'worker', env: stack.env, logDir: stack.logDir }));
        try {
          await Promise.all(workers.map((w) => w.start()));
          const cpu = cpuShares([...stack.apis, ...workers]);
          const multixacts = await countMultixacts(stack.url);
          const waits = sampleWaits(stack.url);
          const result = await closedLoop(ctx, `B8 ${k} worker(s)`, { clients: CLIENTS_PER_WORKER * k, warmupS, seconds }, (client) => runOnce(services[client % services.length]!, body, outputs));
          ctx.say(`CPU (% of one core, warm-up included): ${cpu()}`);
          const [busy, ...top] = await waits.stop();
          ctx.say(`Postgres, what active connections wait for (${busy}):`);
          for (const line of top) ctx.say(`  ${line}`);
          const made = await multixacts.stop();
          // Counted over the warm-up too: per run, divided by the runs of both at the measured rate.
          ctx.say(`Postgres multixacts made: ${made} (about ${(made / Math.max(1, result.rate * (warmupS + seconds))).toFixed(2)} per run)`);
          rates.set(k, result.rate);
          ctx.say(`${k} worker process(es): ${result.rate.toFixed(1)} runs/s (${(result.rate * CHAIN).toFixed(0)} steps/s; ${result.completed} runs in ${seconds} s${result.failed ? `, ${result.failed} failed` : ''})`);
          // The processes' logs go with the stack's directory: a failure's logged cause is printed now.
          if (result.failed) for (const line of errorLines(stack.logDir).slice(0, 5)) ctx.say(`logged: ${line}`);
          rows.push({ id: 'B8', figure: `throughput, ${k} worker process${k > 1 ? 'es' : ''} (${CHAIN}-node chains, ${cpus} CPUs)`, ours: result.rate, unit: 'runs/s', kind: 'rate' });
        } finally {
          // SIGTERM: a graceful stop (the queue is already empty: the closed loop awaited every run).
          await Promise.all(workers.map((w) => w.stop()));
        }
      }
    } finally {
      await stack.close();
    }
    const base = rates.get(1)!;
    for (const [k, rate] of rates) {
      if (k === 1) continue;
      const speedUp = rate / base;
      const goal = GOALS[k];
      rows.push({
        id: 'B8',
        figure: `speed-up 1 → ${k} worker processes (${cpus} CPUs: bounded by the machine)`,
        ours: speedUp,
        unit: '×',
        kind: 'rate',
        ...(goal !== undefined ? { goal: atLeast(`≥ ${goal}× at ${k}`, speedUp, goal) } : {}),
      });
    }
    return rows;
  },
};
