import { setTimeout as sleep } from 'node:timers/promises';
import { Failpoints } from '../platform/failpoints';
import { contextFrom, inSpan, SpanKind, SPAN_ATTRIBUTES } from '../platform/tracing';
import { createRedisConnection, createRedisSubscriber, isRedelivery, redisTargetOf, startStepWorker, subscribeBatchStarts, subscribeProviderJobEnds, subscribeRunAborts, type StepWorker } from '../queue';
import { ProviderWebhookUrls } from '../platform/provider-webhook-urls';
import { AddressAllowList } from '../platform/address-policy';
import { safePost } from '../nodes';
import { ScheduleRepository, BatchRepository, OrganizationRepository, OutputCacheRepository, RunRecoveryRepository, WebhookRepository } from '../store';
import { ScheduleTicker, ScheduleWebhooks, BatchFeeder, BatchWebhooks, OutputCache, InFlightSteps, ProviderJobPolls, ProviderWaits, createRetentionSweeper, type RetentionSweeper, RunReaper, RunDeadlines, RepeatingSweep, WebhookDispatcher, StepExecutor } from '../runs';
import { runLauncher } from './run-launching';
import type { ServiceResources } from './service-resources';

/** A step worker with its reaper and retention sweeper. */
export interface BuiltWorker {
  worker: StepWorker;
  reaper: RunReaper;
  /** Cancels runs past their own deadline (`maxDurationSeconds`). */
  deadlines: RunDeadlines;
  /** Delivers runs' events to their webhooks. */
  webhooks: WebhookDispatcher;
  sweeper: RetentionSweeper;
  /** Feeds batches' rows to runs and settles them (docs/batches.md). */
  batches: BatchFeeder;
  /** Delivers batches' ends to their webhooks. */
  batchWebhooks: BatchWebhooks;
  /** Starts schedules' runs at their ticks (docs/schedules.md); on its timer with `background`. */
  schedules: ScheduleTicker;
  /** Delivers schedules' pauses to their webhooks. */
  scheduleWebhooks: ScheduleWebhooks;
  /**
   * Takes no new job and waits for those in hand, up to `SHUTDOWN_GRACE_MS`: steps still running
   * then are handed back (left to another worker once their lock lapses, `STEP_LOCK_MS`). Once
   * begun (by `drain`), `close` waits for it.
   */
  stop(): Promise<void>;
  /** Stops as `stop` does, stops the timers, closes its connections. */
  close(): Promise<void>;
}

/**
 * The worker side of the service over the shared resources: a BullMQ worker running steps with
 * the step executor, listening for aborted runs; the stuck-run reaper and the retention sweeper
 * on their timers when `background` (every worker may run them: both are idempotent). Without
 * `background` they are built but left for the caller to drive (tests sweep by hand).
 */
export async function buildWorker(resources: ServiceResources, options: { background: boolean }): Promise<BuiltWorker> {
  const { config, log, metrics } = resources;
  // Webhook receivers are caller-given URLs: the address rules of input URLs (FETCH_ALLOW_PRIVATE's exceptions included).
  const webhookAllowList = new AddressAllowList(config.fetch.allowPrivate);
  const inFlight = new InFlightSteps();
  const providerWaits = new ProviderWaits({
    limiter: resources.providerLimiter,
    log,
    observer: { slowedDown: (provider, reason) => metrics.providerSlowdowns.inc({ provider, reason }) },
  });
  const abortSubscriber = createRedisSubscriber(redisTargetOf(config), (err) => log.warn({ err }, 'run abort channel: Redis error'));
  const unsubscribe = await subscribeRunAborts(abortSubscriber, config.redisPrefix, (runId) => {
    inFlight.abortRun(runId, new Error('the run stopped'));
  });
  // Parked provider jobs poll on one timer; a provider's webhook (through any API process) brings a job's poll forward.
  const jobPolls = new ProviderJobPolls();
  const unsubscribeJobEnds = await subscribeProviderJobEnds(abortSubscriber, config.redisPrefix, (jobKey) => jobPolls.wake(jobKey));
  const providerJobs = {
    polls: jobPolls,
    ...(config.providerWebhookBaseUrl ? { webhooks: new ProviderWebhookUrls({ baseUrl: config.providerWebhookBaseUrl, secret: config.blobSigningSecret }) } : {}),
    webhookPollMs: config.providerWebhookPollSeconds * 1000,
  };
  const executor = new StepExecutor({
    runs: resources.runs,
    steps: resources.steps,
    contexts: resources.contexts,
    lifecycle: resources.lifecycle,
    events: resources.runEvents,
    queue: resources.queue,
    inFlight,
    findNode: resources.findNode,
    mayRunInline: resources.mayRunInline,
    artifactsFor: (runId, signal) => resources.runArtifacts(runId, signal),
    retry: { attempts: config.stepRetryAttempts, maxAttempts: config.stepMaxAttempts, baseDelayMs: config.stepRetryBaseMs },
    log,
    failpoints: new Failpoints(config.failpoints),
    observer: {
      stepFinished: (node, outcome, seconds, costMicros) => {
        metrics.stepDuration.observe({ node, outcome }, seconds);
        if (costMicros > 0) metrics.costSettled.inc({ node }, costMicros / 1_000_000);
      },
    },
    providers: providerWaits,
    providerJobs,
    outputCache: new OutputCache({
      store: new OutputCacheRepository(resources.database),
      isOwnRef: (ref) => resources.lifecycle.isOwnRef(ref),
      maxEntries: config.outputCacheMaxEntries,
      ttlSeconds: config.outputCacheTtlSeconds,
      maxEntryBytes: config.outputCacheMaxEntryBytes,
      log,
      observe: (result, node, n = 1) => metrics.outputCache.inc({ node, result }, n),
    }),
  });
  const workerConnection = createRedisConnection(redisTargetOf(config));
  // Jobs this process is running now, of its WORKER_CONCURRENCY (svc_worker_jobs_active).
  let busy = 0;
  const idleWaiters: (() => void)[] = [];
  const idle = () => (busy === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve)));
  const worker = startStepWorker({
    connection: workerConnection,
    prefix: config.redisPrefix,
    concurrency: config.workerConcurrency,
    lendable: config.providerStepConcurrency,
    lockMs: config.stepLockMs,
    log,
    // Fair scheduling: an ended job frees its organization's slot and its room in the window for the next organization's job.
    onEnded: (job) => void resources.queue.release((job.data as { orgId?: string }).orgId, job.id!).catch((err: unknown) => log.warn({ err }, 'fair dispatch: could not release a job\'s slot')),
    handlers: {
      'step.execute': ({ runId, nodeId, attemptToken, group, trace }, job) =>
        asBusy(() => {
          // Its step waits on a provider: the job's slot is lent back, and the fair dispatch fills the room in BullMQ's list (the job keeps its organization's turn: ORG_STEP_CONCURRENCY counts steps in flight, whatever they wait on).
          const lendSlot = () => {
            const back = worker.lendSlot();
            if (back) void resources.queue.refill().catch((err: unknown) => log.warn({ err }, 'fair dispatch: could not refill the queue'));
            return back;
          };
          return executeStep(runId, nodeId, trace, job, { redelivered: isRedelivery(job), lendSlot, ...(attemptToken === undefined ? {} : { attemptToken }), ...(group ? { group } : {}) });
        }),
      // A bundle's steps are quick local nodes (none waits on a provider: no slot to lend), run side
      // by side; the job ends when all have, and fails (BullMQ delivers it again: each step that
      // ran refuses its redelivery) if any of them threw.
      'step.bundle': ({ steps, trace }, job) =>
        asBusy(async () => {
          const redelivered = isRedelivery(job);
          const ended = await Promise.allSettled(steps.map(({ runId, nodeId, attemptToken }) => executeStep(runId, nodeId, trace, job, { redelivered, attemptToken })));
          const failed = ended.find((end): end is PromiseRejectedResult => end.status === 'rejected');
          if (failed) throw failed.reason;
        }),
    },
  });
  // Jobs (a bundle is one) running now on this process' slots.
  async function asBusy(run: () => Promise<void>): Promise<void> {
    busy++;
    try {
      await run();
    } finally {
      busy--;
      if (busy === 0) for (const resolve of idleWaiters.splice(0)) resolve();
    }
  }
  // The run's trace goes on from the context the job carries (the API's call, or the step that enqueued it).
  function executeStep(runId: string, nodeId: string, trace: Record<string, string> | undefined, job: { attemptsStarted: number }, options: Parameters<StepExecutor['execute']>[2]): Promise<void> {
    const attributes = { [SPAN_ATTRIBUTES.runId]: runId, [SPAN_ATTRIBUTES.nodeId]: nodeId, [SPAN_ATTRIBUTES.attempt]: job.attemptsStarted };
    return inSpan('step.execute', { kind: SpanKind.CONSUMER, parent: contextFrom(trace), attributes }, () => executor.execute(runId, nodeId, options));
  }
  const reaper = new RunReaper({
    recovery: new RunRecoveryRepository(resources.database.pool),
    contexts: resources.contexts,
    lifecycle: resources.lifecycle,
    queue: resources.queue,
    log,
    stepStuckMs: config.stepStuckSeconds * 1000,
    runTimeoutMs: config.runTimeoutSeconds * 1000,
    observer: {
      swept: ({ timedOut, completed, requeued, failed, settled, keysExpired }) => {
        for (const [action, n] of Object.entries({ timed_out: timedOut, completed, requeued, failed, lost_settled: settled, keys_expired: keysExpired })) if (n > 0) metrics.reaperActions.inc({ action }, n);
      },
      failed: () => metrics.reaperActions.inc({ action: 'sweep_error' }),
    },
  });
  const deadlines = new RunDeadlines({
    recovery: new RunRecoveryRepository(resources.database.pool),
    lifecycle: resources.lifecycle,
    log,
    observer: {
      cancelled: (n) => metrics.reaperActions.inc({ action: 'deadline_cancelled' }, n),
      failed: () => metrics.reaperActions.inc({ action: 'deadline_sweep_error' }),
    },
  });
  const webhooks = new WebhookDispatcher({
    store: new WebhookRepository(resources.database),
    events: resources.bus,
    runs: resources.runs,
    post: (url, body, headers) => safePost(url, { body, headers, timeoutMs: config.webhookTimeoutMs, allow: webhookAllowList }),
    log,
    retryDelaysMs: config.webhookRetryDelaysMs,
    giveUpMs: config.webhookGiveUpSeconds * 1000,
    pollMs: config.webhookPollMs,
    leaseMs: config.webhookLeaseMs,
    observer: { attempt: (outcome) => metrics.webhookAttempts.inc({ outcome }) },
  });
  const sweeper = createRetentionSweeper({
    artifacts: resources.artifacts,
    blobs: resources.blobs.store,
    log,
    batchSize: 200,
    intervalMs: config.retentionSweepIntervalSeconds * 1000,
    observer: {
      swept: ({ deleted, failed }) => {
        if (deleted > 0) metrics.retentionArtifacts.inc({ result: 'deleted' }, deleted);
        if (failed > 0) metrics.retentionArtifacts.inc({ result: 'failed' }, failed);
      },
      failed: () => metrics.retentionArtifacts.inc({ result: 'sweep_error' }),
    },
  });
  const batchStore = new BatchRepository(resources.database);
  const batches = new BatchFeeder({
    batches: batchStore,
    contexts: resources.contexts,
    events: resources.runEvents,
    queue: resources.queue,
    lanes: resources.queue,
    lifecycle: resources.lifecycle,
    mayRunInline: resources.mayRunInline,
    log,
    intervalMs: config.batchFeedIntervalMs,
    idleMs: config.batchFeedIdleMs,
    maxStart: config.batchFeedRows,
    bundleRows: config.batchBundleRows,
    // Enough rows waiting to keep the batches' share of the workers busy, and no more (no share: all of them).
    maxStartWhileInteractive:
      config.batchSlotsWhileInteractive === 0 && config.batchGapWhileInteractiveMs === 0 ? config.batchFeedRows : 8 * Math.max(1, config.batchSlotsWhileInteractive),
    minGapMs: config.batchFeedGapMs,
    observer: {
      turn: (started, settled) => {
        if (started > 0) metrics.batchRowsStarted.inc(started);
        if (settled > 0) metrics.batchRowsSettled.inc(settled);
      },
      ended: (status) => metrics.batchesEnded.inc({ status }),
    },
  });
  // A batch stored or retried (through any API process) gets a turn at once.
  const unsubscribeBatchStarts = await subscribeBatchStarts(abortSubscriber, config.redisPrefix, (batchId) => void batches.nudge(batchId));
  // A batch's run that ended here gives its batch a turn at once: its row settles, the next starts.
  resources.lifecycle.onEnded((runId) => {
    void resources.contexts.peek(runId)?.then((context) => {
      if (context?.batchId) void batches.nudge(context.batchId);
    }, () => undefined);
  });
  const webhookSecrets = new WebhookRepository(resources.database);
  // A batch's end and a schedule's pause are delivered as run webhooks are: same secret, address rules, retries.
  const recordWebhooks = {
    secret: (orgId: string) => webhookSecrets.secret(orgId),
    post: (url: string, body: string, headers: Record<string, string>) => safePost(url, { body, headers, timeoutMs: config.webhookTimeoutMs, allow: webhookAllowList }),
    log,
    retryDelaysMs: config.webhookRetryDelaysMs,
    giveUpMs: config.webhookGiveUpSeconds * 1000,
    pollMs: config.webhookPollMs,
  };
  const batchWebhooks = new BatchWebhooks({ batches: batchStore, ...recordWebhooks });
  const scheduleStore = new ScheduleRepository(resources.database);
  const schedules = new ScheduleTicker({
    schedules: scheduleStore,
    runs: runLauncher(resources),
    log,
    intervalMs: config.scheduleSweepMs,
    observer: { tick: (outcome) => metrics.scheduleTicks.inc({ outcome }), paused: (reason) => metrics.schedulesPaused.inc({ reason }) },
  });
  const scheduleWebhooks = new ScheduleWebhooks({ schedules: scheduleStore, ...recordWebhooks });
  metrics.observeWorker(() => ({ concurrency: config.workerConcurrency, active: busy - worker.lentSlots, providerWaits: worker.lentSlots, providerConcurrency: config.providerStepConcurrency, providerJobsParked: providerWaits.parkedJobs }));
  // Not left to `background`: without it, an organization parked by releases a killed worker never sent would wait for good.
  const fairReconcile = new RepeatingSweep(() => resources.queue.reconcile().catch((err: unknown) => log.warn({ err }, 'fair dispatch: reconcile failed')));
  // Organizations' own limits, from Postgres (`admin org limit`) into Redis, where the dispatch reads them; again after a Redis that lost them.
  const organizations = new OrganizationRepository(resources.database.prisma);
  const syncLimits = () => organizations.stepConcurrencyLimits().then((limits) => resources.queue.setOrgLimits(limits)).catch((err: unknown) => log.warn({ err }, "fair dispatch: could not copy organizations' limits"));
  const limitsSync = new RepeatingSweep(syncLimits);
  if (config.fairScheduling) {
    await syncLimits();
    fairReconcile.start(config.fairReconcileMs);
    limitsSync.start(config.orgLimitsSyncSeconds * 1000);
  }
  // Not left to `background`: batches are work callers wait for, not a repair.
  batches.start();
  if (options.background) {
    schedules.start();
    scheduleWebhooks.start();
    batchWebhooks.start();
    reaper.start(config.reaperIntervalSeconds * 1000);
    deadlines.start(config.deadlineSweepMs);
    webhooks.start(config.webhookPollMs);
    sweeper.start();
  }
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await worker.pause(true);
      const finished = await Promise.race([idle().then(() => true), sleep(config.shutdownGraceMs, false, { ref: false })]);
      if (!finished) log.warn({ steps: busy }, 'steps still running at the end of SHUTDOWN_GRACE_MS are handed back: another worker takes each over once its lock lapses (STEP_LOCK_MS)');
      await worker.close(!finished);
    })().catch((err: unknown) => log.warn({ err }, 'error while stopping the step worker')));
  return {
    worker,
    reaper,
    deadlines,
    webhooks,
    sweeper,
    batches,
    batchWebhooks,
    schedules,
    scheduleWebhooks,
    stop,
    async close() {
      await batches.stop();
      await fairReconcile.stop();
      await limitsSync.stop();
      if (options.background) {
        await reaper.stop();
        await deadlines.stop();
        await webhooks.stop();
        await batchWebhooks.stop();
        await schedules.stop();
        await scheduleWebhooks.stop();
        await sweeper.stop();
      }
      await stop();
      await workerConnection.quit();
      await unsubscribe();
      await unsubscribeJobEnds();
      await unsubscribeBatchStarts();
      await abortSubscriber.quit();
    },
  };
}
