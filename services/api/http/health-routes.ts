import { Router } from 'express';

/** A dependency the service needs to be ready (Redis, Postgres, ...). */
export interface ReadinessProbe {
  name: string;
  check(): Promise<void>;
}

const PROBE_TIMEOUT_MS = 2000;

async function runProbe(probe: ReadinessProbe): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([probe.check(), timeout]);
    return 'ok';
  } catch (err) {
    return `failing: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `/healthz`: the process is alive (no dependency checks, so a Redis outage does not make an
 * orchestrator restart every replica). `/readyz`: every dependency answers; 503 otherwise.
 */
export function healthRoutes(probes: readonly ReadinessProbe[]): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.locals.route = '/healthz';
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    res.locals.route = '/readyz';
    const results = await Promise.all(probes.map(async (p) => [p.name, await runProbe(p)] as const));
    const checks = Object.fromEntries(results);
    const ready = results.every(([, result]) => result === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
  });
  return router;
}
