import express, { type Express } from 'express';
import type { ServiceResources } from './service-resources';
import { healthRoutes, type ReadinessProbe, metricsRoute } from '../api';
import { pingPostgres } from '../store';

/** What `/readyz` checks: Redis and Postgres answer. */
export function readinessProbes(resources: ServiceResources): ReadinessProbe[] {
  const { redis, database } = resources;
  return [
    { name: 'redis', check: async () => void (await redis.ping()) },
    { name: 'postgres', check: () => pingPostgres(database.prisma) },
  ];
}

/**
 * The monitoring port of a process without the API (ROLE=worker, `METRICS_PORT`): `/metrics`
 * for Prometheus, `/healthz` and `/readyz` for the orchestrator's probes, the same routes an
 * API process serves on its own port.
 */
export function monitorApp(resources: ServiceResources, isDraining: () => boolean): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(healthRoutes(readinessProbes(resources), { onFailure: (probe, err) => resources.log.warn({ err, probe }, 'readiness probe failed'), isDraining }));
  app.use(metricsRoute(resources.metrics.registry));
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found: this port serves GET /metrics, /healthz and /readyz', code: 'not_found' });
  });
  return app;
}
