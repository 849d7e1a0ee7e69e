import type { Express } from 'express';
import type { NodeDefinition } from '../nodes';
import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';
import type { Metrics } from '../platform/metrics';
import type { RunEventBus, StepQueue, StepWorker } from '../queue';
import type { BatchWebhooks, RetentionSweeper, RunDeadlines, RunReaper, ScheduleTicker, ScheduleWebhooks, WebhookDispatcher } from '../runs';
import { buildResources, type ServiceResources } from './service-resources';
import { buildWorker } from './build-worker';
import { buildApi } from './build-api';
import { monitorApp } from './monitor-app';
import type { Invoke } from '../api';

/** The parts of one service process, as its role asks. */
export interface ServiceRuntime {
  resources: ServiceResources;
  /** The Express app and the call path under it (roles all and api). */
  app: Express | undefined;
  invoke: Invoke | undefined;
  /** The step worker, with its reaper and sweeper (roles all and worker). */
  worker: StepWorker | undefined;
  reaper: RunReaper | undefined;
  /** Cancels runs past their own deadline (roles all and worker). */
  deadlines: RunDeadlines | undefined;
  /** Delivers runs' events to their webhooks (roles all and worker). */
  webhooks: WebhookDispatcher | undefined;
  sweeper: RetentionSweeper | undefined;
  /** Starts schedules' runs at their ticks, and delivers their pauses' webhooks (roles all and worker; on timers with `background`). */
  schedules: ScheduleTicker | undefined;
  scheduleWebhooks: ScheduleWebhooks | undefined;
  /** Delivers batches' ends to their webhooks (roles all and worker; on its timer with `background`). */
  batchWebhooks: BatchWebhooks | undefined;
  bus: RunEventBus;
  queue: StepQueue;
  /** ROLE=worker: `/metrics`, `/healthz` and `/readyz`, served on `METRICS_PORT` (an API process serves them itself). */
  monitorApp: Express | undefined;
  /** The process is stopping: `/readyz` answers 503 from now on (load balancers and Kubernetes stop sending it work) and its worker takes no new job. */
  drain(): void;
  /** Stops everything this runtime started, in order (worker, API, resources), and closes its connections. */
  close(): Promise<void>;
}

/**
 * The composition root (DESIGN.md: adapters are wired in each process's entry point): the
 * shared resources built once, then the API and the worker over them as `ROLE` asks.
 * `workers/serve.ts` uses it, and so do the integration tests and benchmarks, which run the very
 * same parts. `background`: the worker runs its reaper and sweeper on their timers. `nodes`:
 * nodes an embedding adds to the catalog (a node with `inline` may run in batches).
 */
export async function buildService(options: { config: Config; log: Logger; metrics: Metrics; background?: boolean; nodes?: readonly NodeDefinition[] }): Promise<ServiceRuntime> {
  const { config, log, metrics } = options;
  const servesApi = config.role === 'all' || config.role === 'api';
  const runsWorker = config.role === 'all' || config.role === 'worker';
  const resources = await buildResources(config, log, metrics, { subscribe: servesApi, nodes: options.nodes ?? [] });
  let draining = false;
  const isDraining = () => draining;
  const api = servesApi ? buildApi(resources, { isDraining }) : undefined;
  const worker = runsWorker ? await buildWorker(resources, { background: options.background ?? false }) : undefined;
  let closed = false;
  return {
    resources,
    app: api?.app,
    invoke: api?.invoke,
    worker: worker?.worker,
    reaper: worker?.reaper,
    deadlines: worker?.deadlines,
    webhooks: worker?.webhooks,
    sweeper: worker?.sweeper,
    schedules: worker?.schedules,
    scheduleWebhooks: worker?.scheduleWebhooks,
    batchWebhooks: worker?.batchWebhooks,
    bus: resources.bus,
    queue: resources.queue,
    monitorApp: servesApi ? undefined : monitorApp(resources, isDraining),
    drain() {
      draining = true;
      // The worker stops taking jobs now, while an API in the same process lets its streams run.
      void worker?.stop();
    },
    async close() {
      if (closed) return;
      draining = true;
      closed = true;
      for (const part of [worker, api]) await part?.close().catch((err: unknown) => log.warn({ err }, 'error while closing'));
      await resources.close();
    },
  };
}
