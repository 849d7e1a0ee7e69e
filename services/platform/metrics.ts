import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { dbCalls, providerCalls, redisCalls, type DbCall, type ProviderCall, type RedisCall } from './call-channels';

/**
 * The metrics of one process (docs/operations.md lists them with their labels). Names follow
 * Prometheus conventions (`_total`, `_seconds`, base units); labels are bounded: route patterns,
 * operation and node ids, error codes, command names, provider names, never ids of runs, users,
 * organizations or tokens, nor raw paths.
 */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  /** Calls of the contract's operations and routes on any surface, by outcome: `ok` or the error code. */
  operationCalls: Counter<'operation' | 'outcome'>;
  runsStarted: Counter<never>;
  batchesCreated: Counter<never>;
  batchRowsStarted: Counter<never>;
  batchRowsSettled: Counter<never>;
  batchesEnded: Counter<'status'>;
  /** Schedules' ticks this worker handled, by outcome: started, failed (its run refused), skipped (missed or over budget). */
  scheduleTicks: Counter<'outcome'>;
  /** Schedules that paused themselves, by reason code. */
  schedulesPaused: Counter<'reason'>;
  /** Runs that reached a terminal state in this process: outcome completed|failed, reason = error code. */
  runsFinished: Counter<'outcome' | 'reason'>;
  /** Step attempts by node id and outcome (completed|failed|retried). */
  stepDuration: Histogram<'node' | 'outcome'>;
  costSettled: Counter<'node'>;
  /**
   * What an event stream tells metrics (the SSE writer's `StreamMetrics`): open streams, events
   * sent, and the delivery lag of live events (those appended before the stream opened are not
   * counted).
   */
  streams: {
    opened(): void;
    closed(): void;
    sent(appendedAt: number | undefined, openedAt: number): void;
  };
  /** Requests refused with 429 by the API's limits: limit = token, ip or open_streams. */
  rateLimited: Counter<'limit'>;
  /** Access token lookups by how they were answered: hit (the API process' cache), miss (read and remembered) or bypass (cache off or not hearing changes). */
  tokenLookups: Counter<'result'>;
  /** Step jobs by state (waiting, active, delayed, failed), read from `source` when scraped. */
  queueJobs: Gauge<'state'>;
  reaperActions: Counter<'action'>;
  webhookAttempts: Counter<'outcome'>;
  providerWebhooks: Counter<'provider' | 'outcome'>;
  retentionArtifacts: Counter<'result'>;
  /** Output cache lookups and writes of eligible steps, by node id and result: hit, miss, store, eviction, error. */
  outputCache: Counter<'node' | 'result'>;
  /** Where `queueJobs` reads its counts (the step queue, in processes that have one). */
  observeQueue(source: () => Promise<Record<string, number>>): void;
  /** Where the worker gauges read their values (in processes that run a step worker). */
  observeWorker(source: () => WorkerState): void;
  /** Where the provider limit gauges read this process' view of the shared limits (in processes that run steps). */
  observeProviderLimits(source: () => readonly ProviderLimitState[]): void;
  /** Time a granted provider request waited for its turn, by limit key. */
  providerLimitWait: Histogram<'provider'>;
  /** Answers that slowed the whole fleet for a provider, by reason: retry_after (a 429), remaining (a rate header at 0). */
  providerSlowdowns: Counter<'provider' | 'reason'>;
  /** Where the pool gauges read their values (the process's node-postgres pool). */
  observePool(source: () => PoolState): void;
  /** Records the timings published on the call channels (Postgres, Redis, providers) until the returned function is called. */
  observeCalls(): () => void;
}

/** A worker process' slots: those on its own work, and the steps waiting on providers outside them. */
export interface WorkerState {
  concurrency: number;
  active: number;
  providerWaits: number;
  providerConcurrency: number;
  /** Of the provider waits, those on a provider job submitted or resumed (parked: polled, resumable by another worker). */
  providerJobsParked: number;
}

/** One provider limit key as this process sees it (queue/provider-limiter.ts's snapshot). */
export interface ProviderLimitState {
  key: string;
  waiting: number;
  oldestWaitMs: number;
  inFlight: number;
  remaining: { requests: number | null; tokens: number | null; calls: number | null };
}

/** A node-postgres pool's counts. */
export interface PoolState {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

/**
 * prom-client's default gauges whose names end in `_total`, which Prometheus keeps for counters
 * (`promtool check metrics` flags them, and an operator's CI lints what it scrapes). Each is the
 * sum of its per-type gauge, which stays: `sum without (type) (nodejs_active_handles)`.
 */
const NON_CONFORMING_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Fast calls (Postgres, Redis): 0.25 ms to 10 s. */
const CALL_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const STEP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The child of a call histogram labelled (name, outcome), looked up once per pair. */
function childrenOf(histogram: Histogram<string>): (name: string, ok: boolean) => { observe(value: number): void } {
  const children = new Map<string, { observe(value: number): void }>();
  return (name, ok) => {
    const key = ok ? name : `${name}\u0000error`;
    let child = children.get(key);
    if (!child) {
      child = histogram.labels(name, ok ? 'ok' : 'error');
      children.set(key, child);
    }
    return child;
  };
}

export function createMetrics(options: { role: string }): Metrics {
  const registry = new Registry();
  const sources: {
    queue?: () => Promise<Record<string, number>>;
    worker?: () => WorkerState;
    pool?: () => PoolState;
    providerLimits?: () => readonly ProviderLimitState[];
  } = {};
  registry.setDefaultLabels({ role: options.role });
  collectDefaultMetrics({ register: registry });
  for (const name of NON_CONFORMING_DEFAULTS) registry.removeSingleMetric(name);
  const registers = [registry];

  const dbQueries = new Histogram({ name: 'svc_db_query_duration_seconds', help: 'Postgres statements, by first keyword (select, insert, ..., other) and outcome (ok|error)', labelNames: ['operation', 'outcome'], buckets: CALL_BUCKETS, registers });
  const redisCommands = new Histogram({ name: 'svc_redis_command_duration_seconds', help: 'Redis commands (blocking and pub/sub ones left out), by command name and outcome (ok|error)', labelNames: ['command', 'outcome'], buckets: CALL_BUCKETS, registers });
  const providerRequests = new Histogram({
    name: 'svc_provider_request_duration_seconds',
    help: 'HTTP tries of hosted provider calls until their response headers, by provider and outcome (2xx, 4xx, 429, 5xx, timeout, network_error, aborted)',
    labelNames: ['provider', 'outcome'],
    buckets: REQUEST_BUCKETS.concat([60, 120]),
    registers,
  });

  /** A gauge set at each scrape from a source, when the process has one. */
  const sourcedGauge = <T>(name: string, help: string, source: () => T | undefined, value: (state: T) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const state = source();
        if (state !== undefined) this.set(value(state));
      },
    });
  sourcedGauge('svc_worker_concurrency', 'Steps this worker process may run at once (WORKER_CONCURRENCY)', () => sources.worker?.(), (w) => w.concurrency);
  sourcedGauge('svc_worker_jobs_active', 'Step jobs this worker process is running now, of its svc_worker_concurrency', () => sources.worker?.(), (w) => w.active);
  sourcedGauge('svc_worker_provider_waits', 'Steps this worker process has waiting on providers now, outside its svc_worker_concurrency slots', () => sources.worker?.(), (w) => w.providerWaits);
  sourcedGauge('svc_worker_provider_jobs_parked', "Steps this worker process waits on a provider job with (a fal request, a Replicate prediction: recorded, polled, resumed by another worker should this one die)", () => sources.worker?.(), (w) => w.providerJobsParked);
  sourcedGauge('svc_worker_provider_concurrency', 'Steps this worker process may have waiting on providers at once (PROVIDER_STEP_CONCURRENCY)', () => sources.worker?.(), (w) => w.providerConcurrency);
  /** A gauge per provider limit key, set at each scrape from this process' view of the limits. */
  const limitGauge = (name: string, help: string, value: (state: ProviderLimitState) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['provider'],
      registers,
      collect() {
        this.reset();
        for (const state of sources.providerLimits?.() ?? []) this.set({ provider: state.key }, value(state));
      },
    });
  limitGauge('svc_provider_limit_waiting', "Provider requests of this process waiting for their turn under the provider's shared limits", (s) => s.waiting);
  limitGauge('svc_provider_limit_oldest_wait_seconds', 'How long the oldest provider request of this process waiting for its turn has waited', (s) => s.oldestWaitMs / 1000);
  limitGauge('svc_provider_in_flight', "Concurrent-call slots of the provider's limit this process holds", (s) => s.inFlight);
  new Gauge({
    name: 'svc_provider_limit_remaining',
    help: "What is left of a provider's shared budget as this process last saw it, by budget (requests, tokens, calls); absent for a budget without a limit",
    labelNames: ['provider', 'budget'],
    registers,
    collect() {
      this.reset();
      for (const state of sources.providerLimits?.() ?? []) {
        for (const [budget, left] of Object.entries(state.remaining)) if (left !== null) this.set({ provider: state.key, budget }, left);
      }
    },
  });
  sourcedGauge('svc_db_pool_max_connections', "Most connections this process's Postgres pool opens (DATABASE_POOL_SIZE)", () => sources.pool?.(), (p) => p.max);
  sourcedGauge('svc_db_pool_waiting', 'Queries waiting for a connection of the pool (above 0: the pool is saturated)', () => sources.pool?.(), (p) => p.waiting);
  new Gauge({
    name: 'svc_db_pool_connections',
    help: "Connections of this process's Postgres pool, by state (busy|idle)",
    labelNames: ['state'],
    registers,
    collect() {
      const pool = sources.pool?.();
      if (!pool) return;
      this.set({ state: 'busy' }, pool.total - pool.idle);
      this.set({ state: 'idle' }, pool.idle);
    },
  });

  const openStreams = new Gauge({ name: 'svc_sse_streams_open', help: 'Run event streams open on this API process', registers });
  const sseEventsSent = new Counter({ name: 'svc_sse_events_sent_total', help: 'Run events written to event-stream clients', registers });
  const eventDeliveryLag = new Histogram({
    name: 'svc_event_delivery_lag_seconds',
    help: "From a run event's append (Redis' clock) to its write to a client that was streaming when it was appended",
    buckets: CALL_BUCKETS,
    registers,
  });

  return {
    registry,
    httpRequests: new Counter({ name: 'svc_http_requests_total', help: 'HTTP requests served, by method, route pattern and status code', labelNames: ['method', 'route', 'status'], registers }),
    httpDuration: new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration until the response is finished, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: REQUEST_BUCKETS,
      registers,
    }),
    operationCalls: new Counter({
      name: 'svc_operation_calls_total',
      help: 'Calls of the operations and routes of the contract on every surface (HTTP, MCP), by name and outcome: ok or the error code (insufficient_credit is a 402)',
      labelNames: ['operation', 'outcome'],
      registers,
    }),
    runsStarted: new Counter({ name: 'svc_runs_started_total', help: 'Runs accepted and stored (a request attached to its idempotency key\'s run is not counted)', registers }),
    batchesCreated: new Counter({ name: 'svc_batches_created_total', help: 'Batches accepted and stored (a request attached to its idempotency key\'s batch is not counted)', registers }),
    batchRowsStarted: new Counter({ name: 'svc_batch_rows_started_total', help: "Batch rows whose runs this worker's feeder stored and started", registers }),
    batchRowsSettled: new Counter({ name: 'svc_batch_rows_settled_total', help: "Batch rows this worker's feeder settled against their batch's cap as they ended (or failed unstarted)", registers }),
    batchesEnded: new Counter({ name: 'svc_batches_ended_total', help: 'Batches that ended, by status (completed, cancelled)', labelNames: ['status'], registers }),
    scheduleTicks: new Counter({ name: 'svc_schedule_ticks_total', help: "Schedules' ticks handled, by outcome: started (its run stored), failed (its run refused), skipped (missed, or over the month's budget)", labelNames: ['outcome'], registers }),
    schedulesPaused: new Counter({ name: 'svc_schedules_paused_total', help: 'Schedules that paused themselves, by reason (workflow_not_found, insufficient_credit, or the refusal code)', labelNames: ['reason'], registers }),
    runsFinished: new Counter({
      name: 'svc_runs_finished_total',
      help: 'Runs that reached a terminal state, by outcome and reason (the error code of failed runs; spend_cap_exceeded counts spend-cap rejections)',
      labelNames: ['outcome', 'reason'],
      registers,
    }),
    stepDuration: new Histogram({
      name: 'svc_step_duration_seconds',
      help: 'Step attempts by node id and outcome: completed, failed, or retried (a transient failure followed by another attempt); the count is the number of attempts',
      labelNames: ['node', 'outcome'],
      buckets: STEP_BUCKETS,
      registers,
    }),
    costSettled: new Counter({ name: 'svc_cost_settled_usd_total', help: 'Cost charged to organizations for step attempts, USD, by node id (failed attempts included)', labelNames: ['node'], registers }),
    streams: {
      opened: () => openStreams.inc(),
      closed: () => openStreams.dec(),
      sent(appendedAt, openedAt) {
        sseEventsSent.inc();
        // Replayed events (appended before the stream opened) would measure the client's resume, not delivery.
        if (appendedAt !== undefined && appendedAt >= openedAt) eventDeliveryLag.observe(Math.max(0, Date.now() - appendedAt) / 1000);
      },
    },
    rateLimited: new Counter({
      name: 'svc_rate_limited_total',
      help: 'Requests refused with 429 by a limit of the API: token, ip (requests per minute) or open_streams (per organization)',
      labelNames: ['limit'],
      registers,
    }),
    tokenLookups: new Counter({
      name: 'svc_token_lookups_total',
      help: "Access token lookups by authentication: hit (this API process' cache), miss (read from Postgres and remembered) or bypass (cache off, or token changes not heard)",
      labelNames: ['result'],
      registers,
    }),
    queueJobs: new Gauge({
      name: 'svc_step_jobs',
      help: "Step jobs in the queue by state (waiting, active, delayed, failed; held: the part of waiting that waits for its organization's turn under fair scheduling)",
      labelNames: ['state'],
      registers,
      async collect() {
        // A scrape must not fail because Redis is briefly away: the gauge keeps its last values.
        const counts = await sources.queue?.().catch(() => undefined);
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ state }, n);
      },
    }),
    reaperActions: new Counter({
      name: 'svc_reaper_actions_total',
      help: "The stuck-run reaper's work: runs timed_out, runs completed, steps requeued, runs failed, attempts lost_settled (lost with their workers after their run stopped), runs deadline_cancelled (past their maxDurationSeconds), idempotency keys_expired; and sweeps that failed (sweep_error, deadline_sweep_error)",
      labelNames: ['action'],
      registers,
    }),
    webhookAttempts: new Counter({
      name: 'svc_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), retry (failed, to be tried again), failed (given up on after WEBHOOK_GIVE_UP_SECONDS)',
      labelNames: ['outcome'],
      registers,
    }),
    providerWebhooks: new Counter({
      name: 'svc_provider_webhooks_total',
      help: "Calls of fal's and Replicate's webhooks (PROVIDER_WEBHOOK_BASE_URL) by provider and outcome: woke (the workers were told; the job's step polls now), refused (a URL this service did not sign), unavailable (Redis did not take it; the provider retries, the step polls on its timer)",
      labelNames: ['provider', 'outcome'],
      registers,
    }),
    retentionArtifacts: new Counter({
      name: 'svc_retention_artifacts_total',
      help: "The retention sweeper's work: expired artifacts deleted, or failed (left for the next sweep); and sweeps that failed (sweep_error)",
      labelNames: ['result'],
      registers,
    }),
    outputCache: new Counter({
      name: 'svc_output_cache_total',
      help: 'Output cache use by steps that may use it, by node id and result: hit (answered from the cache, nothing charged), miss, store (outputs kept), eviction (entries evicted for the per-organization bound), error (a failed lookup, run as a miss, or a failed store)',
      labelNames: ['node', 'result'],
      registers,
    }),
    observeQueue(source) {
      sources.queue = source;
    },
    observeWorker(source) {
      sources.worker = source;
    },
    observeProviderLimits(source) {
      sources.providerLimits = source;
    },
    providerLimitWait: new Histogram({
      name: 'svc_provider_limit_wait_seconds',
      help: "Time a provider request waited for its turn under the provider's shared limits before it was sent",
      labelNames: ['provider'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
      registers,
    }),
    providerSlowdowns: new Counter({
      name: 'svc_provider_slowdowns_total',
      help: 'Answers that slowed every worker calling a provider, by reason: retry_after (a 429), remaining (a rate header said the budget is spent)',
      labelNames: ['provider', 'reason'],
      registers,
    }),
    observePool(source) {
      sources.pool = source;
    },
    observeCalls() {
      // Every command and statement is observed: the labelled children are looked up once per
      // label pair, not hashed from a label object per call (docs/performance/design-floor.md, B9).
      const dbChild = childrenOf(dbQueries);
      const redisChild = childrenOf(redisCommands);
      const onDb = (message: unknown) => {
        const call = message as DbCall;
        dbChild(call.operation, call.ok).observe(call.seconds);
      };
      const onRedis = (message: unknown) => {
        const call = message as RedisCall;
        redisChild(call.command, call.ok).observe(call.seconds);
      };
      const onProvider = (message: unknown) => {
        const call = message as ProviderCall;
        providerRequests.observe({ provider: call.provider, outcome: call.outcome }, call.seconds);
      };
      dbCalls.subscribe(onDb);
      redisCalls.subscribe(onRedis);
      providerCalls.subscribe(onProvider);
      return () => {
        dbCalls.unsubscribe(onDb);
        redisCalls.unsubscribe(onRedis);
        providerCalls.unsubscribe(onProvider);
      };
    },
  };
}
