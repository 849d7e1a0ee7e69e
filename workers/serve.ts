/**
 * The service process. `ROLE=all` (the default) runs the API and a step worker in one process;
 * `ROLE=api` and `ROLE=worker` run one of them, for scaling each separately.
 */
import { createApp, createHandlers, listen, type ReadinessProbe, type RunningServer } from '../services/api';
import { createBlobRouter } from '../services/api/routes/blob-route';
import { createNodeCatalog } from '../services/nodes';
import { ConfigError, loadConfig } from '../services/platform/config';
import { createLogger } from '../services/platform/logger';
import { createMetrics } from '../services/platform/metrics';
import { AppError } from '../services/platform/app-error';
import { createRedisConnection } from '../services/queue';
import { createPrismaClient, TokenRepository } from '../services/store';
import { createBlobStoreFromConfig } from './blob-store-from-config';
import { startStepWorker } from './step-worker';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel });
  const metrics = createMetrics({ role: config.role });
  const closers: (() => Promise<unknown>)[] = [];

  const redis = createRedisConnection(config.redisUrl);
  closers.push(() => redis.quit());

  let server: RunningServer | undefined;
  if (config.role === 'all' || config.role === 'api') {
    const prisma = createPrismaClient(config.databaseUrl);
    closers.push(() => prisma.$disconnect());
    const blobs = await createBlobStoreFromConfig(config);
    const probes: ReadinessProbe[] = [
      { name: 'redis', check: async () => void (await redis.ping()) },
      { name: 'postgres', check: async () => void (await prisma.$queryRaw`SELECT 1`) },
    ];
    const app = createApp({
      handlers: createHandlers({ catalog: createNodeCatalog() }),
      tokens: new TokenRepository(prisma),
      log,
      metrics,
      probes,
      bodyLimitBytes: config.bodyLimitBytes,
      trustProxy: config.trustProxy,
      publicBaseUrl: config.publicBaseUrl,
      extraRoutes: [createBlobRouter({ store: blobs.store, signer: blobs.signer })],
    });
    server = await listen(app, config.host, config.port);
    log.info({ url: server.url, publicBaseUrl: config.publicBaseUrl }, 'API listening');
  }

  if (config.role === 'all' || config.role === 'worker') {
    const workerConnection = createRedisConnection(config.redisUrl);
    const worker = startStepWorker({
      connection: workerConnection,
      concurrency: config.workerConcurrency,
      log,
      handlers: {
        'step.execute': async () => {
          throw new AppError({ code: 'not_implemented', message: 'step execution is not implemented by this build yet' });
        },
      },
    });
    closers.unshift(async () => {
      await worker.close();
      await workerConnection.quit();
    });
    log.info({ concurrency: config.workerConcurrency }, 'step worker started');
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const grace = config.shutdownGraceMs;
    const hardStop = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, grace + 5000);
    hardStop.unref();
    if (server) await server.close(grace);
    for (const close of closers) await close().catch((err) => log.warn({ err }, 'error while closing'));
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
