import fs from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { QUEUE_NAMES, runEventKeys } from '../../../services/queue';
import { applyMigrations } from '../../../services/store/migration-runner';
import { createPrismaClient } from '../../../services/store';
import { serviceProcess, type ServiceProcess } from '../../faults/support/service-process';
import { benchServiceEnv } from '../../support/bench-stack';
import { databaseUrl, onServer } from '../../support/database';
import { seedAccount, type SeededAccount } from '../../support/fixtures';
import { freePorts } from '../../support/local-servers';
import type { BenchContext } from './context';
import { processRssBytes } from './process-cpu';
import { post } from './service-client';

/** The chat model the provider benches configure, and its price: 10 input and 5 output tokens at 1.00/2.00 USD per million make 20 micro-USD a call. */
export const BENCH_MODEL = 'bench-model';
export const USAGE = { prompt: 10, completion: 5 };
export const PRICE_PER_CALL_MICROS = 20;
/** What the fake answers, and so the run's output. */
export const ANSWER = 'benchmark answer';

/** A run of one `openai-chat` step (its answer short: 16 tokens reserved) and its output. */
export const CHAT_RUN = JSON.stringify({
  workflow: {
    version: 2,
    nodes: [
      { id: 'chat', uses: 'openai-chat', inputs: { prompt: 'Say something.', model: BENCH_MODEL, maxTokens: 16 } },
      { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } },
    ],
  },
});

/**
 * The service as separate OS processes on the bench stack, as production runs it: one API
 * (ROLE=api) and `workers` worker processes (ROLE=worker), with OpenAI pointed at the bench's
 * fake. Its own database and Redis prefix. Fair scheduling stays on, but opened wide: one
 * organization may dispatch any number of step jobs (ORG_STEP_CONCURRENCY=0) and BullMQ's list
 * holds up to `steps` of them (FAIR_DISPATCH_WINDOW), so that the fleet, not the scheduler's
 * default caps (64 and 32), bounds what is in flight.
 */
export interface ProviderService {
  api: ServiceProcess;
  workers: ServiceProcess[];
  account: SeededAccount;
  db: pg.Pool;
  /** REDIS_PREFIX of its processes, and their Redis. */
  prefix: string;
  redisUrl: string;
  /** Holds the step queue (BullMQ's pause): runs stored meanwhile wait whole until `release`. */
  hold(): Promise<void>;
  release(): Promise<void>;
  /** The error-level lines of the processes' logs (a failed run's cause), shortened. */
  errorLines(): string[];
  close(): Promise<void>;
}

export interface ProviderServiceOptions {
  /** Names the database, the Redis prefix and the logs (`b11`). */
  name: string;
  providerBaseUrl: string;
  workers: number;
  steps: number;
  /** Settings of this bench over the defaults (BENCH_SERVICE_ENV still goes over them). */
  env?: Record<string, string>;
}

export async function startProviderService(ctx: BenchContext, options: ProviderServiceOptions): Promise<ProviderService> {
  const dir = fs.mkdtempSync(path.join(ctx.stack.tmpDir, `${options.name}-`));
  const database = `svc_bench_${options.name}_${Date.now()}`;
  await onServer(ctx.stack.postgres, `CREATE DATABASE ${database}`);
  const url = databaseUrl(ctx.stack.postgres, database);
  await applyMigrations({ connectionString: url });
  const prisma = createPrismaClient(url);
  let account: SeededAccount;
  try {
    // 1,000 USD; a step reserves about 200 micro-USD (16 output tokens and the prompt).
    account = await seedAccount(prisma, { slug: `bench-${options.name}`, scopes: ['read', 'run'], balanceMicros: 1_000_000_000 });
  } finally {
    await prisma.$disconnect();
  }
  const prefix = `svc${options.name}`;
  const [port] = await freePorts(1);
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: url,
    REDIS_URL: ctx.stack.redisUrl,
    REDIS_PREFIX: prefix,
    BLOB_DRIVER: 'fs',
    BLOB_DIR: path.join(dir, 'blobs'),
    DATA_DIR: dir,
    BLOB_SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef',
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    // info: readiness is read from the log ("API listening", "step worker started").
    LOG_LEVEL: 'info',
    RATE_LIMIT_TOKEN_PER_MINUTE: '10000000',
    RATE_LIMIT_IP_PER_MINUTE: '10000000',
    MAX_OPEN_STREAMS_PER_ORG: '1000000',
    ORG_STEP_CONCURRENCY: '0',
    FAIR_DISPATCH_WINDOW: String(Math.max(32, options.steps)),
    OPENAI_API_KEY: 'sk-bench-0123456789abcdef',
    OPENAI_BASE_URL: options.providerBaseUrl,
    OPENAI_MODELS: BENCH_MODEL,
    OPENAI_PRICES: `${BENCH_MODEL}=1.00/2.00`,
    ...options.env,
    ...benchServiceEnv(),
  };
  const logDir = path.join(dir, 'logs');
  fs.mkdirSync(logDir, { recursive: true });
  const api = serviceProcess({ name: 'api', role: 'api', port, env, logDir });
  const workers = Array.from({ length: options.workers }, (_, i) => serviceProcess({ name: `worker-${i + 1}`, role: 'worker', env, logDir }));
  const db = new pg.Pool({ connectionString: url, max: 2 });
  db.on('error', () => undefined);
  const redis = new Redis(ctx.stack.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE_NAMES.steps, { connection: redis, prefix });
  try {
    await Promise.all([api.start(), ...workers.map((w) => w.start())]);
  } catch (err) {
    await Promise.all([api.kill(), ...workers.map((w) => w.kill())]);
    await queue.close();
    redis.disconnect();
    await db.end();
    throw err;
  }
  return {
    api,
    workers,
    account,
    db,
    prefix,
    redisUrl: ctx.stack.redisUrl,
    hold: () => queue.pause(),
    release: () => queue.resume(),
    errorLines: () =>
      fs
        .readdirSync(logDir)
        .flatMap((file) => fs.readFileSync(path.join(logDir, file), 'utf8').split('\n'))
        .filter((line) => /"level":(50|60)/.test(line))
        .map((line) => line.slice(0, 600)),
    async close() {
      // SIGTERM: a graceful stop; the queue is empty by then, or the bench has already failed.
      await Promise.all([api.stop(), ...workers.map((w) => w.stop())]);
      await queue.close();
      redis.disconnect();
      await db.end();
    },
  };
}

/** Posts `count` runs of `body` from `clients` connections at once; each is stored once its response's headers are in, and its stream is dropped then. */
export async function postRuns(service: ProviderService, body: string, count: number, clients = 64): Promise<void> {
  let posted = 0;
  const client = async () => {
    while (posted < count) {
      posted++;
      const res = await post(`${service.api.url}/v1/runs`, body, { Authorization: `Bearer ${service.account.token}` });
      if (res.statusCode !== 200) {
        const text = await new Promise<string>((resolve) => {
          let t = '';
          res.setEncoding('utf8').on('data', (c: string) => (t += c)).on('end', () => resolve(t));
        });
        throw new Error(`POST /v1/runs answered ${res.statusCode}: ${text.slice(0, 300)}`);
      }
      res.destroy();
    }
  };
  await Promise.all(Array.from({ length: Math.min(clients, count) }, client));
}

/** The organization's runs by status. */
export async function runCounts(service: ProviderService): Promise<Record<string, number>> {
  const { rows } = await service.db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM runs WHERE org_id = $1 GROUP BY status', [service.account.orgId]);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/**
 * Waits until all `total` runs of the organization have ended (completed, failed or cancelled),
 * calling `tick` every 250 ms meanwhile; rejects after `timeoutMs`. Resolves with the counts by status.
 */
export async function awaitRuns(service: ProviderService, total: number, timeoutMs: number, tick: () => void | Promise<void> = () => undefined): Promise<Record<string, number>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await tick();
    const counts = await runCounts(service);
    const ended = (counts.completed ?? 0) + (counts.failed ?? 0) + (counts.cancelled ?? 0);
    if (ended >= total) return counts;
    if (Date.now() > deadline) throw new Error(`${ended} of ${total} runs ended within ${timeoutMs / 1000} s (${JSON.stringify(counts)})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Each `chat` step's time from its `step.started` to its `step.completed`, ms, read from the
 * runs' event logs in Redis (each entry's `at`: Redis' clock, milliseconds), for the runs
 * created at or after `since`.
 */
export async function stepDurations(service: ProviderService, since: Date): Promise<number[]> {
  const { rows } = await service.db.query<{ id: string }>('SELECT id FROM runs WHERE org_id = $1 AND created_at >= $2', [service.account.orgId, since]);
  const redis = new Redis(service.redisUrl);
  try {
    const pipeline = redis.pipeline();
    for (const { id } of rows) pipeline.lrange(runEventKeys(service.prefix, id).log, 0, -1);
    const replies = (await pipeline.exec()) ?? [];
    const durations: number[] = [];
    for (const [err, entries] of replies) {
      if (err) throw err;
      const events = (entries as string[]).map((text) => JSON.parse(text) as { at?: number; event: { type: string; nodeId?: string } });
      const started = events.find((e) => e.event.type === 'step.started' && e.event.nodeId === 'chat')?.at;
      const completed = events.find((e) => e.event.type === 'step.completed' && e.event.nodeId === 'chat')?.at;
      if (started !== undefined && completed !== undefined) durations.push(completed - started);
    }
    return durations;
  } finally {
    redis.disconnect();
  }
}

/** A worker process' memory: its RSS from /proc and its V8 heap in use from its own /metrics. */
export interface MemorySample {
  rssBytes: number;
  heapUsedBytes: number;
}

/** Reads a worker's memory; its /metrics address is the one its log announced at start. */
export function memoryProbe(worker: ServiceProcess): () => Promise<MemorySample> {
  const line = fs
    .readFileSync(worker.logFile, 'utf8')
    .split('\n')
    .findLast((l) => l.includes('metrics and health checks listening'));
  const url = line ? (JSON.parse(line) as { url?: string }).url : undefined;
  if (!url) throw new Error(`${worker.name} announced no /metrics address (${worker.logFile})`);
  return async () => {
    const rssBytes = processRssBytes(worker.pid);
    const text = await (await fetch(`${url}/metrics`)).text();
    const heap = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)/m.exec(text);
    if (!heap) throw new Error(`${worker.name}'s /metrics has no nodejs_heap_size_used_bytes`);
    return { rssBytes, heapUsedBytes: Number(heap[1]) };
  };
}
