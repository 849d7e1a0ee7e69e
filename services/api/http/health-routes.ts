import { Router } from 'express';

/** A dependency the service needs to be ready (Redis, Postgres, ...). */
export interface ReadinessProbe {
  name: string;
  check(): Promise<void>;
}

const PROBE_TIMEOUT_MS = 2000;

const TIMED_OUT = Symbol('timed out');

/**
 * `ok`, or why not in words that carry nothing of the deployment: the dependency's own error
 * names its host and port (`Can't reach database server at 10.0.3.7:5432`), and `/readyz` needs
 * no token. The error itself goes to `onFailure` (the log).
 */
async function runProbe(probe: ReadinessProbe, onFailure?: (name: string, err: unknown) => void): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), PROBE_TIMEOUT_MS);
  });
  try {
    if ((await Promise.race([probe.check(), timeout])) === TIMED_OUT) return `failing: no answer within ${PROBE_TIMEOUT_MS} ms`;
    return 'ok';
  } catch (err) {
    onFailure?.(probe.name, err);
    return 'failing: not reachable or refusing queries';
  } finally {
    clearTimeout(timer);
  }
}

/** Options of {@link healthRoutes}. */
export interface HealthOptions {
  /** Told a failed probe's own error (for the log). */
  onFailure?: (name: string, err: unknown) => void;
  /** True once the process is stopping: `/readyz` answers 503 at once, so a load balancer stops sending it work. */
  isDraining?: () => boolean;
}

/**
 * `/healthz`: the process is alive (no dependency checks, so a Redis outage does not make an
 * orchestrator restart every replica). `/readyz`: every dependency answers; 503 otherwise, and
 * 503 `draining` from the moment the process is told to stop.
 */
export function healthRoutes(probes: readonly ReadinessProbe[], options: HealthOptions = {}): Router {
  const { onFailure, isDraining } = options;
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.locals.route = '/healthz';
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    res.locals.route = '/readyz';
    if (isDraining?.()) {
      res.status(503).json({ status: 'draining', checks: {} });
      return;
    }
    const results = await Promise.all(probes.map(async (p) => [p.name, await runProbe(p, onFailure)] as const));
    const checks = Object.fromEntries(results);
    const ready = results.every(([, result]) => result === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
  });
  return router;
}
