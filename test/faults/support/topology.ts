import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { createDatabase, type Database } from '../../../services/store';
import { AccountAdmin } from '../../../services/store/account-admin';
import { createTestDatabase, type TestDatabase } from '../../support/database';
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy';
import { seedAccount, type SeededAccount } from '../../support/fixtures';
import { freePorts } from '../../support/local-servers';
import { startPrivateServers, type PrivateServers } from '../../support/private-servers';
import { uniqueName } from '../../support/stack';
import { startLoadBalancer, type LoadBalancer } from './load-balancer';
import { providerEnv, startProviderFake, type ProviderFake } from './provider-fake';
import { serviceProcess, type ServiceProcess } from './service-process';

/**
 * The fault suite's production-like topology: API processes and worker processes (separate OS
 * processes, ROLE=api|worker, `workers/serve.ts`), a round-robin load balancer in front of the
 * APIs, Redis with its AOF and Postgres with fsync (servers of the topology's own, so they can
 * be killed), the provider fake, and a fault-injecting TCP proxy on each path from the service to
 * Redis, Postgres and the provider. Scenarios reach the service through `url` and look at the
 * truth directly (`database`, `redisUrl`), past the proxies.
 */
export interface Topology {
  /** The load balancer: what clients use. */
  url: string;
  apis: ServiceProcess[];
  workers: ServiceProcess[];
  /** An organization with 100 USD credited through the ledger, and its `read`+`run` token. */
  account: SeededAccount;
  /** The database, directly (not through the proxy): for the checker and for looking. */
  database: Database;
  databaseUrl: string;
  /** Redis, directly. */
  redisUrl: string;
  /** The Redis key prefix of the service's keys, queues and channels. */
  redisPrefix: string;
  provider: ProviderFake;
  /** The paths from every service process to Redis, Postgres and the provider. */
  proxies: { redis: FaultProxy; postgres: FaultProxy; provider: FaultProxy };
  servers: PrivateServers;
  lb: LoadBalancer;
  /** The environment every process started with (before its role's overrides). */
  env: Record<string, string>;
  /** Kills every client connection Redis has (normal and pub/sub), as a failover or `CLIENT KILL` does; returns how many. */
  killRedisClients(): Promise<number>;
  /** Stops everything and removes the topology's files. */
  close(): Promise<void>;
}

export interface TopologyOptions {
  apis?: number;
  workers?: number;
  /** On top of the defaults, for every process. */
  env?: Record<string, string>;
  apiEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
  /** Credit of the seeded organization, USD as text (default "100"). */
  creditUsd?: string;
}

/** Settings that make faults show within a scenario's time: short locks, a busy reaper, fast heartbeats. */
const FAULT_SUITE_DEFAULTS: Record<string, string> = {
  LOG_LEVEL: 'info',
  WORKER_CONCURRENCY: '16',
  STEP_RETRY_BASE_MS: '50',
  STEP_LOCK_MS: '4000',
  REAPER_INTERVAL_SECONDS: '2',
  STEP_STUCK_SECONDS: '10',
  STREAM_RECORD_CHECK_MS: '1000',
  SSE_HEARTBEAT_MS: '1000',
  SHUTDOWN_GRACE_MS: '8000',
  PROVIDER_TIMEOUT_MS: '10000',
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000',
  MAX_OPEN_STREAMS_PER_ORG: '100000',
  BLOB_SIGNING_SECRET: 'fault-suite-signing-secret-0123456789',
};

/**
 * Starts the topology, once more if the first start fails: on a machine loaded by the rest of
 * `make test`, a process can outlast its start-up wait (the failed start cleans up after itself).
 */
export async function startTopology(options: TopologyOptions = {}): Promise<Topology> {
  return startTopologyOnce(options).catch(() => startTopologyOnce(options));
}

async function startTopologyOnce(options: TopologyOptions): Promise<Topology> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-faults-'));
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const servers = await startPrivateServers();
    cleanups.push(() => servers.close());
    const db: TestDatabase = await createTestDatabase(servers.postgres);
    cleanups.push(() => db.drop());
    const database = createDatabase(db.url);
    cleanups.push(() => database.close());
    const account = await seedAccount(database.prisma, { slug: 'faults', scopes: ['read', 'run'] });
    await new AccountAdmin(database.prisma).addCredit(account.orgSlug, options.creditUsd ?? '100', 'fault suite');

    const provider = await startProviderFake();
    cleanups.push(() => provider.close());
    const proxies = {
      redis: await startFaultProxy(servers.redisUrl),
      postgres: await startFaultProxy(`postgres://${servers.postgres.host}:${servers.postgres.port}`),
      provider: await startFaultProxy(provider.url),
    };
    cleanups.push(() => Promise.all(Object.values(proxies).map((p) => p.close())));

    const apiCount = options.apis ?? 2;
    const ports = await freePorts(apiCount);
    const lb = await startLoadBalancer(ports);
    cleanups.push(() => lb.close());
    const viaProxy = new URL(db.url);
    viaProxy.port = String(proxies.postgres.port);
    const redisPrefix = uniqueName('faults').slice(0, 40);
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...FAULT_SUITE_DEFAULTS,
      ...providerEnv(proxies.provider.url),
      DATABASE_URL: viaProxy.toString(),
      REDIS_URL: `redis://127.0.0.1:${proxies.redis.port}`,
      REDIS_PREFIX: redisPrefix,
      PUBLIC_BASE_URL: lb.url,
      BLOB_DRIVER: 'fs',
      BLOB_DIR: path.join(dir, 'blobs'),
      DATA_DIR: dir,
      SVC_FAILPOINTS: '',
      ...options.env,
    };
    const logDir = path.join(dir, 'logs');
    fs.mkdirSync(logDir);
    const apis = ports.map((port, i) => serviceProcess({ name: `api-${i + 1}`, role: 'api', port, env: { ...env, ...options.apiEnv }, logDir }));
    const workers = Array.from({ length: options.workers ?? 2 }, (_, i) => serviceProcess({ name: `worker-${i + 1}`, role: 'worker', env: { ...env, ...options.workerEnv }, logDir }));
    const all = [...apis, ...workers];
    cleanups.push(() => Promise.all(all.map((p) => p.kill())));
    await Promise.all(all.map((p) => p.start()));

    return {
      url: lb.url,
      apis,
      workers,
      account,
      database,
      databaseUrl: db.url,
      redisUrl: servers.redisUrl,
      redisPrefix,
      provider,
      proxies,
      servers,
      lb,
      env,
      async killRedisClients() {
        const admin = new Redis(servers.redisUrl, { maxRetriesPerRequest: 1 });
        try {
          let killed = 0;
          for (const type of ['normal', 'pubsub']) killed += Number(await admin.call('CLIENT', 'KILL', 'TYPE', type, 'SKIPME', 'yes'));
          return killed;
        } finally {
          admin.disconnect();
        }
      },
      async close() {
        await runCleanups(cleanups);
        if (process.env.KEEP_FAULT_DIR) console.log(`kept ${dir}`);
        else fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await runCleanups(cleanups);
    // The logs stay for a look at why it did not start.
    throw new Error(`the fault topology did not start (files in ${dir}): ${(err as Error).message}`);
  }
}

/** Runs clean-ups last first; one failing does not stop the others. */
async function runCleanups(cleanups: (() => Promise<unknown>)[]): Promise<void> {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
}
