import path from 'node:path';
import { listen, type RunningServer } from '../../services/api';
import { loadConfig, type Config } from '../../services/platform/config';
import { createLogger, type Logger } from '../../services/platform/logger';
import { createMetrics, type Metrics } from '../../services/platform/metrics';
import { createDatabase, type Database, type PrismaClient } from '../../services/store';
import { buildService, type ServiceRuntime } from '../../services/composition';
import type { NodeDefinition } from '../../services/nodes';
import { createTestDatabase, type PostgresServer, type TestDatabase } from './database';
import { seedAccount, type SeededAccount } from './fixtures';
import { stack, uniqueName } from './stack';

/**
 * The whole service for one test file: its own database (copied from the migrated template),
 * its own Redis prefix, blob directory or S3 bucket, served over HTTP on a free loopback port,
 * built by the same composition root as `workers/serve.ts`.
 */
export interface TestService {
  url: string;
  config: Config;
  env: Record<string, string>;
  runtime: ServiceRuntime;
  metrics: Metrics;
  prisma: PrismaClient;
  /** Prisma and the pool together, for the repositories of the hot paths (`new RunRepository(service.database)`). */
  database: Database;
  db: TestDatabase;
  /** An organization with credit and a `run`+`read` token. */
  account: SeededAccount;
  /** Starts another runtime (same database, Redis prefix and blobs), e.g. a second worker. */
  extra(overrides?: Record<string, string>): Promise<ServiceRuntime>;
  close(): Promise<void>;
}

export interface TestServiceOptions {
  /** Nodes added to the catalog, as an embedding of the service adds its own. */
  nodes?: readonly NodeDefinition[];
  /** Environment overrides (e.g. `STEP_LOCK_MS`, `ROLE`). */
  env?: Record<string, string>;
  blobs?: 'fs' | 's3';
  balanceMicros?: number;
  /** A Postgres server of the test's own (with the template database) instead of the stack's. */
  postgres?: PostgresServer;
  /** The service's logger (a test that reads what is logged passes one writing to memory); by default, `LOG_LEVEL`'s on stdout. */
  log?: Logger;
}

export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const s = stack();
  const db = await createTestDatabase(options.postgres ?? s.postgres);
  const prefix = uniqueName('svc');
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    REDIS_URL: s.redisUrl,
    REDIS_PREFIX: prefix.slice(0, 40),
    BLOB_SIGNING_SECRET: 'test-signing-secret-0123456789abcdef',
    PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WORKER_CONCURRENCY: '8',
    STEP_RETRY_BASE_MS: '10',
    SSE_HEARTBEAT_MS: '1000',
    // Generous limits: suites make many requests with one token from one address. Suites about
    // the limits override them.
    RATE_LIMIT_TOKEN_PER_MINUTE: '100000',
    RATE_LIMIT_IP_PER_MINUTE: '100000',
    MAX_OPEN_STREAMS_PER_ORG: '10000',
    ...(options.blobs === 's3'
      ? { BLOB_DRIVER: 's3', S3_ENDPOINT: s.s3.endpoint, S3_ACCESS_KEY: s.s3.accessKey, S3_SECRET_KEY: s.s3.secretKey, S3_BUCKET: uniqueName('runs'), S3_REGION: s.s3.region }
      : { BLOB_DRIVER: 'fs', BLOB_DIR: path.join(s.tmpDir, uniqueName('blobs')) }),
    ...options.env,
  };
  const log = options.log ?? createLogger({ level: (env.LOG_LEVEL ?? 'silent') as Config['logLevel'] });
  const database = createDatabase(db.url);
  const prisma = database.prisma;
  const account = await seedAccount(prisma, { slug: 'runner', scopes: ['read', 'run'], balanceMicros: options.balanceMicros ?? 100_000_000 });
  const metrics = createMetrics({ role: 'test' });

  // The port is only known after listening, and blob URLs are built from the public base: bind first.
  const config0 = loadConfig(env);
  const boot = await buildService({ config: { ...config0, role: 'api' }, log, metrics, nodes: options.nodes ?? [] });
  const probe: RunningServer = await listen(boot.app!, '127.0.0.1', 0);
  const url = probe.url;
  await probe.close(0);
  await boot.close();
  env.PORT = new URL(url).port;
  env.PUBLIC_BASE_URL = url;
  const config = loadConfig(env);
  const runtime = await buildService({ config, log, metrics, nodes: options.nodes ?? [] });
  const server = await listen(runtime.app!, '127.0.0.1', config.port, config.http);
  const extras: ServiceRuntime[] = [];

  return {
    url: server.url,
    config,
    env,
    runtime,
    metrics,
    prisma,
    database,
    db,
    account,
    async extra(overrides = {}) {
      const extraConfig = loadConfig({ ...env, ...overrides });
      const started = await buildService({ config: extraConfig, log, metrics: createMetrics({ role: 'test' }), nodes: options.nodes ?? [] });
      extras.push(started);
      return started;
    },
    async close() {
      await server.close(0);
      for (const extra of extras) await extra.close();
      await runtime.close();
      await database.close();
      await db.drop();
    },
  };
}

/** `Authorization` header of a token. */
export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

/**
 * Publishes `definition` as `<account's org>/<slug>` through the editor's routes (create the
 * draft, publish it), as the service's account; throws with the answer when either is refused.
 */
export async function publishWorkflow(service: TestService, slug: string, definition: unknown): Promise<void> {
  const headers = { ...bearer(service.account.token), 'Content-Type': 'application/json' };
  const created = await fetch(`${service.url}/editor/workflows`, { method: 'POST', headers, body: JSON.stringify({ name: slug, definition }) });
  if (created.status !== 201) throw new Error(`creating the draft of ${slug} answered ${created.status}: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const published = await fetch(`${service.url}/editor/workflows/${id}/publish`, { method: 'POST', headers, body: JSON.stringify({ slug }) });
  if (published.status !== 201) throw new Error(`publishing ${slug} answered ${published.status}: ${await published.text()}`);
}
