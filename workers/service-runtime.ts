/**
 * The composition root: builds the service's parts from its configuration and wires them
 * together (DESIGN.md: adapters are wired in each process's entry point). `serve.ts` uses it,
 * and so do the integration tests and benchmarks, which run the very same parts in-process or
 * as child processes.
 */
import type { Express } from 'express';
import type { Artifact } from '../services/contract';
import type { Worker } from 'bullmq';
import { createApp, createHandlers, createInvoker, type ReadinessProbe } from '../services/api';
import { createBlobRouter } from '../services/api/routes/blob-route';
import { createDeviceRouter } from '../services/api/routes/device-routes';
import { createSessionRouter } from '../services/api/routes/session-routes';
import { TokenUsageRecorder } from '../services/api/auth/token-usage';
import { BlobArtifactStore, createInputFetcher, createNodeRegistry } from '../services/nodes';
import { WorkflowAssets } from '../services/nodes/workflow-assets';
import { configuredNodes, type ConfiguredNodeSettings } from './configured-nodes';
import type { Config } from '../services/platform/config';
import { Failpoints } from '../services/platform/failpoints';
import type { Logger } from '../services/platform/logger';
import type { Metrics } from '../services/platform/metrics';
import { createRedisConnection, createRedisSubscriber, DEFAULT_LOG_TTL_SECONDS, publishRunAbort, RateLimiter, RunEventBus, StepQueue, subscribeRunAborts } from '../services/queue';
import { MountTallyAppender } from '../services/queue/mount-tally-appender';
import { InFlightSteps, presentingMountEvents, RunContextCache, RunLauncher, RunLifecycle, RunReaper, RunStarter, StepExecutor, type WorkflowResolver } from '../services/runs';
import {
  ArtifactRepository,
  createDatabase,
  DeviceAuthorizationRepository,
  MembershipRepository,
  OrganizationRepository,
  RunRecoveryRepository,
  RunRepository,
  StepRepository,
  TokenRepository,
  UserRepository,
  WorkflowRepository,
} from '../services/store';
import { createApiLimits } from './api-limits';
import { createBlobStoreFromConfig } from './blob-store-from-config';
import { createRetentionSweeper, type RetentionSweeper } from './retention-sweeper';
import { isRedelivery, startStepWorker } from './step-worker';

/** The settings the runtime reads (the whole `Config` satisfies it). */
export type RuntimeConfig = Pick<
  Config,
  | 'role'
  | 'databaseUrl'
  | 'redisUrl'
  | 'redisPrefix'
  | 'publicBaseUrl'
  | 'blobDriver'
  | 'blobDir'
  | 'blobSigningSecret'
  | 'blobUrlTtlSeconds'
  | 'fetch'
  | 's3'
  | 'bodyLimitBytes'
  | 'rateLimitTokenPerMinute'
  | 'rateLimitIpPerMinute'
  | 'maxOpenStreamsPerOrg'
  | 'trustProxy'
  | 'workerConcurrency'
  | 'stepRetryAttempts'
  | 'stepMaxAttempts'
  | 'stepRetryBaseMs'
  | 'stepLockMs'
  | 'reaperIntervalSeconds'
  | 'stepStuckSeconds'
  | 'runTimeoutSeconds'
  | 'streamRecordCheckMs'
  | 'streamFinishedGraceMs'
  | 'artifactRetentionDays'
  | 'retentionSweepIntervalSeconds'
  | 'failpoints'
  | 'deviceCodeTtlSeconds'
  | 'devicePollIntervalSeconds'
  | 'deviceVerificationUrl'
  | 'deviceUserCodeMaxFailuresPerUser'
  | 'deviceUserCodeMaxFailuresPerIp'
  | 'deviceUserCodeFailureWindowSeconds'
  | 'sessionTokenTtlDays'
  | 'tokenUsageFlushSeconds'
  | 'browserSessionHours'
  | 'signInMaxFailuresPerEmail'
  | 'signInMaxFailuresPerIp'
  | 'signInFailureWindowSeconds'
>
  & ConfiguredNodeSettings;

export interface ServiceRuntime {
  /** The Express app (roles all and api). */
  app: Express | undefined;
  /** The step worker (roles all and worker). */
  worker: Worker | undefined;
  reaper: RunReaper | undefined;
  sweeper: RetentionSweeper | undefined;
  bus: RunEventBus;
  queue: StepQueue;
  /** Stops everything this runtime started, in order, and closes its connections. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  config: RuntimeConfig;
  log: Logger;
  metrics: Metrics;
  /** Start the reaper and the retention sweeper timers (workers; tests drive them by hand). */
  background?: boolean;
  /** Published workflow lookup of runs by `workflowRef`; default: the workflow store. */
  resolver?: WorkflowResolver;
  heartbeatMs?: number;
}

export async function createServiceRuntime(options: RuntimeOptions): Promise<ServiceRuntime> {
  const { config, log, metrics } = options;
  const closers: (() => Promise<unknown>)[] = [];
  // Prisma for CRUD, its pool for the hot paths' typed SQL (services/store/database.ts).
  const database = createDatabase(config.databaseUrl, { onIdleError: (err) => log.warn({ err }, 'an idle Postgres connection failed; the pool replaces it') });
  const prisma = database.prisma;
  closers.push(() => database.close());
  const redis = createRedisConnection(config.redisUrl);
  closers.push(() => redis.quit());

  const runsApi = config.role === 'all' || config.role === 'api';
  const runsWorker = config.role === 'all' || config.role === 'worker';
  const subscriber = runsApi ? createRedisSubscriber(config.redisUrl) : undefined;
  const bus = new RunEventBus({ redis, subscriber, prefix: config.redisPrefix });
  closers.unshift(async () => {
    await bus.close();
    await subscriber?.quit();
  });
  const queue = new StepQueue({ connection: redis, prefix: config.redisPrefix });
  closers.unshift(() => queue.close());

  const runs = new RunRepository(database);
  const workflows = new WorkflowRepository(prisma);
  const steps = new StepRepository(database, { logger: log });
  // The platform's nodes, plus providers with a configured key and installed local tools.
  const nodes = createNodeRegistry(await configuredNodes(config, log));
  const { catalog } = nodes;
  const findNode = nodes.find;
  const contexts = new RunContextCache(runs, catalog);
  // Steps of mounted workflows show as progress of the node that mounts them, framed by its own
  // step.started and step.completed (tallied in Redis with the append, across workers).
  const runEvents = presentingMountEvents({
    events: bus,
    tally: new MountTallyAppender({ redis, prefix: config.redisPrefix, logTtlSeconds: DEFAULT_LOG_TTL_SECONDS }),
    stepsOf: async (runId) => (await contexts.get(runId))?.prepared.plan.steps ?? null,
  });
  const blobs = await createBlobStoreFromConfig(config);
  const artifacts = new ArtifactRepository(prisma);
  const retentionSeconds = config.artifactRetentionDays * 86_400;
  const fetchInput = createInputFetcher(config.fetch);
  /** The artifact store of one run: outputs under its prefix, foreign input refs fetched safely and re-hosted. */
  const runArtifacts = (runId: string, signal?: AbortSignal) =>
    new BlobArtifactStore({
      store: blobs.store,
      signer: blobs.signer,
      publicBaseUrl: config.publicBaseUrl,
      keyPrefix: `runs/${runId}`,
      urlTtlSeconds: config.blobUrlTtlSeconds,
      retentionSeconds,
      recorder: { record: (entry) => artifacts.record(runId, entry) },
      fetchRemote: fetchInput,
      ...(signal ? { signal } : {}),
    });
  const ownBlobPrefix = `${config.publicBaseUrl}/blobs/`;
  const lifecycle = new RunLifecycle({
    runs,
    events: runEvents,
    publishAbort: (runId) => publishRunAbort(redis, config.redisPrefix, runId),
    log,
    onTerminal: (outcome, reason) => metrics.runsFinished.inc({ outcome, reason }),
    isOwnRef: (ref) => ref.startsWith(ownBlobPrefix),
    adoptOutputs: async (runId, outputs) => {
      const store = runArtifacts(runId);
      const adopted = await Promise.all(Object.entries(outputs).map(async ([name, artifact]) => [name, await store.adopt(artifact as Artifact)] as const));
      return Object.fromEntries(adopted);
    },
  });

  let app: Express | undefined;
  if (runsApi) {
    const starter = new RunStarter({ runs, events: bus, queue, lifecycle, contexts, nodes: { find: findNode, mayRunInline: nodes.mayRunInline }, log });
    const probes: ReadinessProbe[] = [
      { name: 'redis', check: async () => void (await redis.ping()) },
      { name: 'postgres', check: async () => void (await prisma.$queryRaw`SELECT 1`) },
    ];
    const tokenRows = new TokenRepository(prisma);
    const usage = new TokenUsageRecorder({ store: tokenRows, intervalMs: config.tokenUsageFlushSeconds * 1000, log });
    closers.unshift(() => usage.close());
    // The token store as routes see it: lookups note each accepted token for `last_used_at`.
    const tokens = {
      findByHash: (hash: string) => tokenRows.findByHash(hash),
      noteUsed: (tokenId: string) => usage.note(tokenId),
      create: (input: Parameters<TokenRepository['create']>[0]) => tokenRows.create(input),
      listForUser: (userId: string, filter: { orgId?: string }) => tokenRows.listForUser(userId, filter),
      revoke: (id: string, revokeOptions: { userId?: string }) => tokenRows.revoke(id, revokeOptions),
    };
    const limits = createApiLimits(config, redis, metrics, log);
    // Before Redis closes (closers run in order; this one is put first).
    closers.unshift(() => limits.close());
    const accountReaders = {
      users: new UserRepository(prisma),
      organizations: new OrganizationRepository(prisma),
      tokens: { ...tokens, findById: (id: string) => tokenRows.findById(id) },
    };
    const deviceAuthorizations = new DeviceAuthorizationRepository(prisma);
    const deviceLimiter = new RateLimiter({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'device-login attempts not counted (Redis did not answer)') });
    const deviceUserCodeFailures = {
      perUser: config.deviceUserCodeMaxFailuresPerUser,
      perIp: config.deviceUserCodeMaxFailuresPerIp,
      windowMs: config.deviceUserCodeFailureWindowSeconds * 1000,
    };
    const deviceLogin = createDeviceRouter({
      ...accountReaders,
      authorizations: deviceAuthorizations,
      memberships: new MembershipRepository(prisma),
      limiter: deviceLimiter,
      verificationUrl: config.deviceVerificationUrl,
      deviceCodeTtlSeconds: config.deviceCodeTtlSeconds,
      pollIntervalSeconds: config.devicePollIntervalSeconds,
      sessionTokenTtlDays: config.sessionTokenTtlDays,
      userCodeFailures: deviceUserCodeFailures,
    });
    const memberships = new MembershipRepository(prisma);
    const users = new UserRepository(prisma);
    const organizations = new OrganizationRepository(prisma);
    const handlers = createHandlers({
      catalog,
      workflows: { published: workflows },
      runs: new RunLauncher({
        specs: catalog,
        findNode,
        resolver: options.resolver ?? workflows,
        starter: {
          start: async (request) => {
            const runId = await starter.start(request);
            metrics.runsStarted.inc();
            return runId;
          },
          startFailed: async (request, error) => {
            const runId = await starter.startFailed(request, error);
            metrics.runsStarted.inc();
            return runId;
          },
        },
        events: bus,
        records: runs,
        recordCheckMs: config.streamRecordCheckMs,
      }),
      runRecords: { runs, events: bus, recordCheckMs: config.streamRecordCheckMs, finishedRunGraceMs: config.streamFinishedGraceMs },
      account: { tokens: accountReaders.tokens, users, organizations },
      editor: {
        workflows,
        memberships,
        specs: catalog,
        // Recipe assets: no run, no expiry (docs/workflows.md, "Recipe assets").
        assets: new WorkflowAssets({ store: blobs.store, signer: blobs.signer, publicBaseUrl: config.publicBaseUrl, recorder: artifacts.recorderFor(null), fetchRemote: fetchInput, maxBytes: config.fetch.maxBytes }),
      },
      deviceApproval: {
        authorizations: deviceAuthorizations,
        organizations,
        memberships,
        limiter: deviceLimiter,
        userCodeFailures: deviceUserCodeFailures,
      },
    });
    app = createApp({
      invoke: createInvoker({ handlers, tokenLimit: limits.tokenLimit, streamSlots: limits.streamSlots }),
      tokens,
      log,
      metrics,
      probes,
      bodyLimitBytes: config.bodyLimitBytes,
      uploadLimitBytes: config.fetch.maxBytes,
      trustProxy: config.trustProxy,
      ipLimit: limits.ipLimit,
      publicBaseUrl: config.publicBaseUrl,
      heartbeatMs: options.heartbeatMs ?? 15_000,
      extraRoutes: [
        createBlobRouter({ store: blobs.store, signer: blobs.signer, workflowLive: (id) => workflows.isLive(id) }),
        deviceLogin,
        createSessionRouter({
          users,
          memberships,
          organizations,
          sessions: tokenRows,
          tokens,
          tokenLimit: limits.tokenLimit,
          limiter: new RateLimiter({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'failed sign-ins not counted (Redis did not answer)') }),
          sessionHours: config.browserSessionHours,
          maxFailuresPerEmail: config.signInMaxFailuresPerEmail,
          maxFailuresPerIp: config.signInMaxFailuresPerIp,
          failureWindowSeconds: config.signInFailureWindowSeconds,
        }),
      ],
    });
    metrics.observeQueue(async () => ({ ...(await queue.counts()) }));
  }

  let worker: Worker | undefined;
  let reaper: RunReaper | undefined;
  let sweeper: RetentionSweeper | undefined;
  if (runsWorker) {
    const inFlight = new InFlightSteps();
    const abortSubscriber = createRedisSubscriber(config.redisUrl);
    const unsubscribe = await subscribeRunAborts(abortSubscriber, config.redisPrefix, (runId) => {
      inFlight.abortRun(runId, new Error('the run stopped'));
    });
    const executor = new StepExecutor({
      runs,
      steps,
      contexts,
      lifecycle,
      events: runEvents,
      queue,
      inFlight,
      findNode,
      mayRunInline: nodes.mayRunInline,
      artifactsFor: (runId, signal) => runArtifacts(runId, signal),
      retry: { attempts: config.stepRetryAttempts, maxAttempts: config.stepMaxAttempts, baseDelayMs: config.stepRetryBaseMs },
      log,
      failpoints: new Failpoints(config.failpoints),
      observer: {
        stepFinished: (node, outcome, seconds, costMicros) => {
          metrics.stepDuration.observe({ node, outcome }, seconds);
          if (costMicros > 0) metrics.costSettled.inc({ node }, costMicros / 1_000_000);
        },
      },
    });
    const workerConnection = createRedisConnection(config.redisUrl);
    worker = startStepWorker({
      connection: workerConnection,
      prefix: config.redisPrefix,
      concurrency: config.workerConcurrency,
      lockMs: config.stepLockMs,
      log,
      handlers: {
        'step.execute': ({ runId, nodeId, attemptToken }, job) =>
          executor.execute(runId, nodeId, { redelivered: isRedelivery(job), ...(attemptToken === undefined ? {} : { attemptToken }) }),
      },
    });
    const started = worker;
    closers.unshift(async () => {
      await started.close();
      await workerConnection.quit();
      await unsubscribe();
      await abortSubscriber.quit();
    });
    reaper = new RunReaper({
      recovery: new RunRecoveryRepository(prisma),
      contexts,
      lifecycle,
      queue,
      log,
      stepStuckMs: config.stepStuckSeconds * 1000,
      runTimeoutMs: config.runTimeoutSeconds * 1000,
    });
    sweeper = createRetentionSweeper({ artifacts, blobs: blobs.store, log, batchSize: 200, intervalMs: config.retentionSweepIntervalSeconds * 1000 });
    if (options.background) {
      reaper.start(config.reaperIntervalSeconds * 1000);
      sweeper.start();
      const [startedReaper, startedSweeper] = [reaper, sweeper];
      closers.unshift(async () => {
        await startedReaper.stop();
        await startedSweeper.stop();
      });
    }
  }

  let closed = false;
  return {
    app,
    worker,
    reaper,
    sweeper,
    bus,
    queue,
    async close() {
      if (closed) return;
      closed = true;
      for (const close of closers) await close().catch((err: unknown) => log.warn({ err }, 'error while closing'));
    },
  };
}
