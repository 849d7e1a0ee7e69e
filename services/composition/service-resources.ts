import type { Redis } from 'ioredis';
import type { Artifact } from '../contract';
import { createBlobStoreFromConfig } from '../blobs/blob-store-from-config';
import type { BlobStore, BlobUrlSigner } from '../blobs';
import { BlobArtifactStore, createInputFetcher, createNodeRegistry, type NodeCatalog, type PinnedNodes, type RemoteFetcher, type NodeDefinition } from '../nodes';
import { configuredNodes, nodeOfEntry } from '../nodes/configured-nodes';
import { isAppError } from '../platform/app-error';
import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';
import type { Metrics } from '../platform/metrics';
import { batchLaneOf, ChannelFanout, createRedisConnection, createRedisSubscriber, DEFAULT_LOG_TTL_SECONDS, publishRunAbort, redisTargetOf, RunEventBus, StepQueue, ProviderLimiter } from '../queue';
import { MountTallyAppender } from '../queue/mount-tally-appender';
import { ArtifactRepository, createDatabase, RunRepository, StepRepository, WorkflowRepository, type Database } from '../store';
import { presentingMountEvents, type RunEventAppender, RunContextCache, RunLifecycle } from '../runs';

/**
 * What every process of the service shares, built once from the configuration and handed to
 * `buildApi` and `buildWorker` (and to tests, which build the service the same way): the
 * connections, the stores, the node catalog, the run event bus and the run lifecycle.
 */
export interface ServiceResources {
  config: Config;
  log: Logger;
  metrics: Metrics;
  database: Database;
  redis: Redis;
  bus: RunEventBus;
  /**
   * Pub/sub channels other than run events (the hosted MCP server's cancellations), over the same
   * subscriber connection as the bus; absent where resources were built without `subscribe`.
   */
  channels: ChannelFanout | undefined;
  queue: StepQueue;
  /** The providers' limits shared by every process (catalog files' `limits:` and PROVIDER_LIMITS, as they were at the start). */
  providerLimiter: ProviderLimiter;
  runs: RunRepository;
  steps: StepRepository;
  workflows: WorkflowRepository;
  artifacts: ArtifactRepository;
  catalog: NodeCatalog;
  findNode(id: string): NodeDefinition | undefined;
  mayRunInline(uses: string): boolean;
  /** The catalog file nodes among a run's, as they are now: stored with the run, which runs them whatever a reload changes. */
  pinNodes(uses: Iterable<string>): PinnedNodes;
  /**
   * Reads the configured nodes again (the catalog files, provider keys' nodes, local tools) and
   * swaps them in; runs already created keep theirs. A catalog that does not load is reported
   * and the nodes in use stay: a running process is never left without a catalog.
   */
  reloadNodes(): Promise<void>;
  contexts: RunContextCache;
  /** The bus as steps append to it: mounted workflows' steps shown as progress of their mount. */
  runEvents: RunEventAppender;
  lifecycle: RunLifecycle;
  blobs: { store: BlobStore; signer: BlobUrlSigner };
  /** Fetches a foreign input file safely (address policy, size and time limits). */
  fetchInput: RemoteFetcher;
  /** The artifact store of one run: outputs under its prefix, foreign input refs fetched and re-hosted. */
  runArtifacts(runId: string, signal?: AbortSignal): BlobArtifactStore;
  /** Closes what these resources opened; what was built on them closes first. */
  close(): Promise<void>;
}

/** How {@link buildResources} builds. */
export interface ResourceOptions {
  /** The process follows run streams (the API): the bus gets its own pub/sub connection. */
  subscribe: boolean;
  /** Nodes an embedding of the service adds beside the platform's and the configured ones. */
  nodes?: readonly NodeDefinition[];
}

/** Builds the shared resources. */
export async function buildResources(config: Config, log: Logger, metrics: Metrics, options: ResourceOptions): Promise<ServiceResources> {
  // Prisma for CRUD, its pool for the hot paths' typed SQL (services/store/database.ts).
  const database = createDatabase(config.databaseUrl, {
    poolSize: config.database.poolSize,
    connectTimeoutMs: config.database.connectTimeoutMs,
    queryTimeoutMs: config.database.queryTimeoutMs,
    onIdleError: (err) => log.warn({ err }, 'an idle Postgres connection failed; the pool replaces it'),
  });
  const redis = createRedisConnection(redisTargetOf(config));
  const subscriber = options.subscribe ? createRedisSubscriber(redisTargetOf(config), (err) => log.warn({ err }, 'event subscriber: Redis error')) : undefined;
  const bus = new RunEventBus({ redis, subscriber, prefix: config.redisPrefix });
  // A second fan-out on the one connection: its channels are not the bus's, so neither unsubscribes the other's.
  const channels = subscriber ? new ChannelFanout(subscriber) : undefined;
  const queue = new StepQueue({
    connection: redis,
    prefix: config.redisPrefix,
    onError: (err) => log.warn({ err }, 'step queue: Redis error'),
    ...(config.fairScheduling ? { fair: { orgOf: (runId: string) => orgOfRun(contexts, runId), window: config.fairDispatchWindow, orgLimit: config.orgStepConcurrency, batchSlotsWhileInteractive: config.batchSlotsWhileInteractive, interactiveQuietMs: config.interactiveQuietMs, batchGapWhileInteractiveMs: config.batchGapWhileInteractiveMs } } : {}),
  });
  const { pool } = database;
  metrics.observePool(() => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: config.database.poolSize }));
  metrics.observeQueue(async () => ({ ...(await queue.counts()) }));
  const stopObservingCalls = metrics.observeCalls();
  // What closes before the connections (filled in below, once built).
  const closing: (() => Promise<unknown>)[] = [];
  const close = async (): Promise<void> => {
    const steps: (() => Promise<unknown>)[] = [...closing, async () => stopObservingCalls(), () => queue.close(), () => bus.close(), async () => channels?.close(), async () => subscriber?.quit(), () => redis.quit(), () => database.close()];
    for (const step of steps) await step().catch((err: unknown) => log.warn({ err }, 'error while closing'));
  };

  const runs = new RunRepository(database, { creationsPerOrg: config.database.creationsPerOrg });
  // The platform's nodes, plus providers with a configured key, installed local tools, and the embedding's.
  const configured = async () => {
    const set = await configuredNodes(config, log);
    return { ...set, nodes: [...set.nodes, ...(options.nodes ?? [])] };
  };
  const initial = await configured();
  const nodes = createNodeRegistry(initial, { fromEntry: (entry) => nodeOfEntry(entry, config) });
  // Limits are read at the start: a reload changes the nodes, a restart the limits (docs/providers.md).
  const providerLimiter = new ProviderLimiter({
    redis,
    prefix: config.redisPrefix,
    limits: initial.limits,
    leaseMs: config.providerLimitLeaseSeconds * 1000,
    log,
    observer: { waited: (key, ms) => metrics.providerLimitWait.observe({ provider: key }, ms / 1000) },
  });
  metrics.observeProviderLimits(() => providerLimiter.snapshot());
  closing.unshift(() => providerLimiter.close());
  const reloadNodes = async (): Promise<void> => {
    try {
      nodes.replace(await configured());
      log.info({ nodes: nodes.catalog.list().length }, 'node catalog reloaded');
    } catch (err) {
      log.error({ err }, 'the node catalog did not reload; the nodes in use are kept');
    }
  };
  const contexts = new RunContextCache(runs, nodes.catalog, (entries) => nodes.restore(entries));
  // Steps of mounted workflows show as progress of the node that mounts them, framed by its own
  // step.started and step.completed (tallied in Redis with the append, across workers).
  const runEvents = presentingMountEvents({
    events: bus,
    tally: new MountTallyAppender({ redis, prefix: config.redisPrefix, logTtlSeconds: DEFAULT_LOG_TTL_SECONDS }),
    stepsOf: async (runId) => (await contexts.get(runId))?.prepared.plan.steps ?? null,
  });
  const blobs = await createBlobStoreFromConfig(config);
  const artifacts = new ArtifactRepository(database.prisma);
  const fetchInput = createInputFetcher(config.fetch);
  const runArtifacts = (runId: string, signal?: AbortSignal) =>
    new BlobArtifactStore({
      store: blobs.store,
      signer: blobs.signer,
      publicBaseUrl: config.publicBaseUrl,
      keyPrefix: `runs/${runId}`,
      urlTtlSeconds: config.blobUrlTtlSeconds,
      retentionSeconds: config.artifactRetentionDays * 86_400,
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

  return {
    config,
    log,
    metrics,
    database,
    redis,
    bus,
    channels,
    queue,
    providerLimiter,
    runs,
    steps: new StepRepository(database, { logger: log, settlementsPerOrg: config.database.settlementsPerOrg }),
    workflows: new WorkflowRepository(database.prisma),
    artifacts,
    catalog: nodes.catalog,
    findNode: nodes.find,
    mayRunInline: nodes.mayRunInline,
    pinNodes: (uses) => nodes.pin(uses),
    reloadNodes,
    contexts,
    runEvents,
    lifecycle,
    blobs,
    fetchInput,
    runArtifacts,
    close,
  };
}

/**
 * The organization whose turn a run's steps wait for (fair scheduling): a batch row's run waits in
 * its organization's batch lane (docs/scheduling.md, The batch lane). A run that does not exist,
 * or no longer prepares, has steps that only fail: they wait under no organization's name.
 */
async function orgOfRun(contexts: RunContextCache, runId: string): Promise<string> {
  try {
    const context = await contexts.get(runId);
    if (!context) return NO_ORGANIZATION;
    return context.batchId ? batchLaneOf(context.orgId) : context.orgId;
  } catch (err) {
    if (isAppError(err, 'run_unpreparable')) return NO_ORGANIZATION;
    throw err;
  }
}

const NO_ORGANIZATION = '-';
