/**
 * The service process. `ROLE=all` (the default) runs the API and a step worker in one process;
 * `ROLE=api` and `ROLE=worker` run one of them, for scaling each separately. Workers also run
 * the stuck-run reaper and the retention sweeper (idempotent, so every worker may).
 */
import { listen, type RunningServer } from '../services/api';
import { buildService } from '../services/composition';
import { CatalogFileError } from '../services/nodes';
import { providerLimitsOf } from '../services/nodes/configured-nodes';
import { ConfigError, loadConfig } from '../services/platform/config';
import { ProviderLimitsError } from '../services/platform/provider-limit-settings';
import { createLogger } from '../services/platform/logger';
import { createMetrics } from '../services/platform/metrics';
import { startTracing } from '../services/platform/tracing-sdk';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
    // Before anything starts: a bad catalog entry stops the process, in one line naming the file, the entry and the field;
    // so does a limit naming a provider this server does not call, or two files' limits that disagree.
    providerLimitsOf(config.nodeCatalogFiles, config.providerLimits);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    if (err instanceof CatalogFileError || err instanceof ProviderLimitsError) {
      console.error(`error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel });
  const metrics = createMetrics({ role: config.role });
  // Before anything is built: spans of the service go to the SDK registered here (off by default).
  const tracing = startTracing({ exporter: config.tracesExporter, serviceName: config.tracesServiceName });
  const runtime = await buildService({ config, log, metrics, background: true });

  let server: RunningServer | undefined;
  if (runtime.app) {
    try {
      server = await listen(runtime.app, config.host, config.port, config.http);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      // A taken port is a set-up mistake, not a crash: one line naming it and the way out.
      console.error(`error: port ${config.port} on ${config.host} is already in use by another program; choose another with PORT=<port> (make run PORT=<port>)`);
      await runtime.close();
      process.exit(1);
    }
    log.info({ url: server.url, publicBaseUrl: config.publicBaseUrl }, 'API listening');
  }
  let monitor: RunningServer | undefined;
  if (runtime.monitorApp) {
    monitor = await listen(runtime.monitorApp, config.host, config.metricsPort).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') throw err;
      console.error(`error: port ${config.metricsPort} on ${config.host} (METRICS_PORT, the worker's /metrics) is already in use; choose another with METRICS_PORT=<port>`);
      process.exit(1);
    });
    log.info({ url: monitor.url }, 'metrics and health checks listening');
  }
  if (runtime.worker) log.info({ concurrency: config.workerConcurrency }, 'step worker started');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    // Load balancers and Kubernetes see /readyz turn 503 first, before the listener closes.
    runtime.drain();
    const hardStop = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5000);
    hardStop.unref();
    if (server) await server.close(config.shutdownGraceMs);
    await runtime.close();
    await monitor?.close(0);
    await tracing?.shutdown().catch((err: unknown) => log.warn({ err }, 'could not export the last spans'));
    log.info('stopped');
    process.exit(0);
  };
  // SIGHUP reloads the node catalog (docs/providers.md, Reloading the catalog), as daemons reread their configuration.
  process.on('SIGHUP', () => {
    if (!stopping) void runtime.resources.reloadNodes();
  });
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
