import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listen, type RunningServer } from '../../services/api';
import { loadConfig, type Config } from '../../services/platform/config';
import { createLogger } from '../../services/platform/logger';
import { createMetrics } from '../../services/platform/metrics';
import { applyMigrations } from '../../services/store/migration-runner';
import { createPrismaClient, type PrismaClient } from '../../services/store';
import { buildService, type ServiceRuntime } from '../../services/composition';
import { databaseUrl, onServer, type PostgresServer } from './database';
import { seedAccount, type SeededAccount } from './fixtures';
import { freePorts, serverDir, startDurablePostgres, startPersistentRedis, startPostgres, startRedis, stopPostgres, stopRedis } from './local-servers';

/**
 * The throwaway stack of a benchmark (test/bench/*.bench.ts, run with tsx outside jest): Redis
 * and Postgres on free loopback ports with their state in a fresh temporary directory (the same
 * deploy/local scripts as the test stack; no S3, benchmarks use the fs blob driver), one migrated
 * database, and the whole service built by the composition root and served over HTTP.
 */
export interface BenchStack {
  tmpDir: string;
  /** Whether Postgres runs with fsync and synchronous commits on. */
  fsync: boolean;
  redisUrl: string;
  postgres: PostgresServer;
  /** The migrated database of this benchmark. */
  databaseUrl: string;
  /** Stops both servers and removes the directory; safe to call more than once. */
  stop(): Promise<void>;
}

const BENCH_DATABASE = 'svc_bench';

/**
 * Prints the ERROR/FATAL/PANIC lines Postgres logged during the bench (a deadlock, a cancelled
 * statement, too many clients): a request that failed under load names its cause here even when
 * the service's own log was quiet. Shutdown's own FATALs (terminating connections) and the readiness probe's login as root are left out.
 */
function reportPostgresErrors(tmpDir: string): void {
  let text: string;
  try {
    text = fs.readFileSync(path.join(serverDir.postgres(tmpDir), 'server.log'), 'utf8');
  } catch {
    return;
  }
  const lines = text.split('\n');
  const errors = lines.flatMap((line, i) => {
    if (!/\b(ERROR|FATAL|PANIC):/.test(line) || /terminating connection due to administrator command|the database system is shutting down|role "root" does not exist/.test(line)) return [];
    const statement = lines[i + 1]?.includes('STATEMENT:') ? ` | ${lines[i + 1]!.trim().slice(0, 200)}` : '';
    return [`${line.trim()}${statement}`];
  });
  if (errors.length === 0) return;
  console.log(`\nPostgres logged ${errors.length} error line(s) during the bench (first 20):`);
  for (const line of errors.slice(0, 20)) console.log(`  ${line}`);
}

/**
 * Starts Redis and Postgres in parallel and migrates a database; whatever started is stopped if
 * anything fails. Postgres runs with fsync and synchronous commits on and Redis with its AOF
 * (fsync every second), as `make run` and production have them, unless `fsync: false`
 * (BENCH_FSYNC=off: both without persistence, as the test stack).
 */
export async function startBenchStack(options: { fsync?: boolean } = {}): Promise<BenchStack> {
  const fsync = options.fsync ?? process.env.BENCH_FSYNC !== 'off';
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-stack-'));
  const [redisPort, pgPort] = await freePorts(2);
  const postgres: PostgresServer = { host: '127.0.0.1', port: pgPort!, user: 'postgres' };
  let stopped: Promise<void> | undefined;
  const stack: BenchStack = {
    tmpDir,
    fsync,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    postgres,
    databaseUrl: databaseUrl(postgres, BENCH_DATABASE),
    stop() {
      stopped ??= (async () => {
        reportPostgresErrors(tmpDir);
        const results = await Promise.allSettled([stopRedis(tmpDir, redisPort!), stopPostgres(tmpDir, pgPort!)]);
        fs.rmSync(tmpDir, { recursive: true, force: true });
        const failures = results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : []));
        if (failures.length) throw new Error(`stopping the bench stack failed:\n- ${failures.join('\n- ')}`);
      })();
      return stopped;
    },
  };
  try {
    await Promise.all([
      (fsync ? startPersistentRedis : startRedis)(tmpDir, redisPort!),
      (fsync ? startDurablePostgres : startPostgres)(tmpDir, pgPort!).then(async () => {
        await onServer(postgres, `CREATE DATABASE ${BENCH_DATABASE}`);
        await applyMigrations({ connectionString: stack.databaseUrl });
      }),
    ]);
  } catch (err) {
    await stack.stop().catch(() => undefined);
    throw err;
  }
  return stack;
}

/**
 * Runs `work` against a fresh stack and stops the stack afterwards: on success, on failure, and
 * on Ctrl-C / SIGTERM (then the process exits with 130 / 143).
 */
export async function withBenchStack<T>(work: (stack: BenchStack) => Promise<T>, options: { fsync?: boolean } = {}): Promise<T> {
  const stack = await startBenchStack(options);
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping the bench stack`);
    void stack.stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(stack);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stack.stop();
  }
}

/** The whole service (API + step worker in one process unless `ROLE` says otherwise), served on a free loopback port. */
export interface BenchService {
  url: string;
  config: Config;
  runtime: ServiceRuntime;
  prisma: PrismaClient;
  /** An organization with plenty of credit and a `run`+`read` token. */
  account: SeededAccount;
  close(): Promise<void>;
}

export interface BenchServiceOptions {
  /** Environment overrides (`WORKER_CONCURRENCY`, `ROLE`, ...). */
  env?: Record<string, string>;
  balanceMicros?: number;
}

/**
 * `BENCH_SERVICE_ENV` ("KEY=VALUE,KEY=VALUE"): settings given to every bench service, in this
 * process or in its own, over the workloads' own (`WORKER_CONCURRENCY=64,DATABASE_POOL_SIZE=20`),
 * so that a setting's effect is measured by running the bench with it (docs/performance.md,
 * "Tuning"). The peers keep theirs.
 */
export function benchServiceEnv(): Record<string, string> {
  const text = process.env.BENCH_SERVICE_ENV?.trim();
  if (!text) return {};
  return Object.fromEntries(
    text.split(',').map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`BENCH_SERVICE_ENV: "${pair}" is not KEY=VALUE (write "KEY=VALUE,KEY=VALUE")`);
      return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
    }),
  );
}

export async function startBenchService(stack: BenchStack, options: BenchServiceOptions = {}): Promise<BenchService> {
  const [port] = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    ROLE: 'all',
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.redisUrl,
    REDIS_PREFIX: 'svcbench',
    BLOB_DRIVER: 'fs',
    BLOB_DIR: path.join(stack.tmpDir, 'blobs'),
    DATA_DIR: stack.tmpDir,
    BLOB_SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: url,
    // Errors only (a failed run's cause, e.g. a 500's, is printed); BENCH_LOG_LEVEL=silent for none.
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error',
    WORKER_CONCURRENCY: '16',
    // The limits stay on (their Redis calls are part of a request's cost) but never refuse.
    RATE_LIMIT_TOKEN_PER_MINUTE: '10000000',
    RATE_LIMIT_IP_PER_MINUTE: '10000000',
    MAX_OPEN_STREAMS_PER_ORG: '1000000',
    ...options.env,
    ...benchServiceEnv(),
  });
  const prisma = createPrismaClient(stack.databaseUrl);
  let runtime: ServiceRuntime | undefined;
  let server: RunningServer | undefined;
  try {
    // 1,000 USD: a bench spends 1 micro-USD per math step.
    const account = await seedAccount(prisma, { slug: 'bench', scopes: ['read', 'run'], balanceMicros: options.balanceMicros ?? 1_000_000_000 });
    const log = createLogger({ level: config.logLevel });
    runtime = await buildService({ config, log, metrics: createMetrics({ role: 'bench' }) });
    if (!runtime.app) throw new Error(`ROLE=${config.role} serves no API`);
    server = await listen(runtime.app, config.host, config.port, config.http);
    const [started, running] = [runtime, server];
    return {
      url: server.url,
      config,
      runtime,
      prisma,
      account,
      async close() {
        await running.close(0);
        await started.close();
        await prisma.$disconnect();
      },
    };
  } catch (err) {
    await server?.close(0);
    await runtime?.close();
    await prisma.$disconnect();
    throw err;
  }
}
