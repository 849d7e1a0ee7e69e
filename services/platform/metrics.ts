import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The metrics of one process. Names follow Prometheus conventions; labels are bounded (route
 * patterns and operation names, never ids of runs, users or tokens).
 */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  runsStarted: Counter<never>;
  /** Runs that reached a terminal state in this process: outcome completed|failed, reason = error code. */
  runsFinished: Counter<'outcome' | 'reason'>;
  stepDuration: Histogram<'node' | 'outcome'>;
  costSettled: Counter<'node'>;
  openStreams: Gauge<never>;
  /** Requests refused with 429 by the API's limits: limit = token, ip or open_streams. */
  rateLimited: Counter<'limit'>;
  /** Step jobs by state (waiting, active, delayed), read from `source` when scraped. */
  queueJobs: Gauge<'state'>;
  /** Where `queueJobs` reads its counts (the step queue, in processes that have one). */
  observeQueue(source: () => Promise<Record<string, number>>): void;
}

export function createMetrics(options: { role: string }): Metrics {
  const registry = new Registry();
  let queueSource: (() => Promise<Record<string, number>>) | undefined;
  registry.setDefaultLabels({ role: options.role });
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests served, by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration until the response is finished, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    runsStarted: new Counter({ name: 'svc_runs_started_total', help: 'Runs accepted and started', registers: [registry] }),
    runsFinished: new Counter({
      name: 'svc_runs_finished_total',
      help: 'Runs that reached a terminal state, by outcome and reason (the error code of failed runs)',
      labelNames: ['outcome', 'reason'],
      registers: [registry],
    }),
    stepDuration: new Histogram({
      name: 'svc_step_duration_seconds',
      help: 'Duration of step executions (all attempts), by node id and outcome',
      labelNames: ['node', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
    costSettled: new Counter({ name: 'svc_cost_settled_usd_total', help: 'Cost settled by steps and charged to organizations, USD, by node id', labelNames: ['node'], registers: [registry] }),
    openStreams: new Gauge({ name: 'svc_sse_streams_open', help: 'Run event streams open on this API process', registers: [registry] }),
    rateLimited: new Counter({
      name: 'svc_rate_limited_total',
      help: 'Requests refused with 429 by a limit of the API: token, ip (requests per minute) or open_streams (per organization)',
      labelNames: ['limit'],
      registers: [registry],
    }),
    queueJobs: new Gauge({
      name: 'svc_step_jobs',
      help: 'Step jobs in the queue by state (waiting, active, delayed)',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        // A scrape must not fail because Redis is briefly away: the gauge keeps its last values.
        const counts = await queueSource?.().catch(() => undefined);
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ state }, n);
      },
    }),
    observeQueue(source) {
      queueSource = source;
    },
  };
}
