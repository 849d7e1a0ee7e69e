import type { Express } from 'express';
import { WorkflowAssets } from '../nodes/workflow-assets';
import { RateLimiter } from '../queue';
import { RunLauncher, RunStarter, type ServiceResources } from '../runs';
import { DeviceAuthorizationRepository, MembershipRepository, OrganizationRepository, TokenRepository, UserRepository } from '../store';
import { createApiLimits } from './api-limits';
import { createApp } from './app';
import { TokenUsageRecorder } from './auth/token-usage';
import { createHandlers } from './handlers/create-handlers';
import type { ReadinessProbe } from './http/health-routes';
import { createInvoker, type Invoke } from './invoke/invoke';
import { createBlobRouter } from './routes/blob-route';
import { createDeviceRouter } from './routes/device-routes';
import { createSessionRouter } from './routes/session-routes';

/** The API side of the service. */
export interface BuiltApi {
  app: Express;
  /** The call path under the HTTP routes, for in-process surfaces (the hosted MCP server). */
  invoke: Invoke;
  /** Flushes token usage, gives back stream slots; the resources close after. */
  close(): Promise<void>;
}

/**
 * The API over the shared resources: the handlers of every declared route, `invoke` over them
 * with the configured limits, and the Express app adapting it to HTTP beside the blob, session
 * and device-login routers.
 */
export function buildApi(resources: ServiceResources): BuiltApi {
  const { config, log, metrics, database, redis, runs, workflows, catalog, bus } = resources;
  const prisma = database.prisma;
  const starter = new RunStarter({ runs, events: bus, queue: resources.queue, lifecycle: resources.lifecycle, contexts: resources.contexts, nodes: { find: resources.findNode, mayRunInline: resources.mayRunInline }, log });
  const probes: ReadinessProbe[] = [
    { name: 'redis', check: async () => void (await redis.ping()) },
    { name: 'postgres', check: async () => void (await prisma.$queryRaw`SELECT 1`) },
  ];
  const tokenRows = new TokenRepository(prisma);
  const usage = new TokenUsageRecorder({ store: tokenRows, intervalMs: config.tokenUsageFlushSeconds * 1000, log });
  // The token store as routes see it: lookups note each accepted token for `last_used_at`.
  const tokens = {
    findByHash: (hash: string) => tokenRows.findByHash(hash),
    noteUsed: (tokenId: string) => usage.note(tokenId),
    findById: (id: string) => tokenRows.findById(id),
    create: (input: Parameters<TokenRepository['create']>[0]) => tokenRows.create(input),
    listForUser: (userId: string, filter: { orgId?: string }) => tokenRows.listForUser(userId, filter),
    revoke: (id: string, revokeOptions: { userId?: string }) => tokenRows.revoke(id, revokeOptions),
  };
  const limits = createApiLimits(config, redis, metrics, log);
  const users = new UserRepository(prisma);
  const organizations = new OrganizationRepository(prisma);
  const memberships = new MembershipRepository(prisma);
  const authorizations = new DeviceAuthorizationRepository(prisma);
  const deviceLimiter = new RateLimiter({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'device-login attempts not counted (Redis did not answer)') });
  const userCodeFailures = {
    perUser: config.deviceUserCodeMaxFailuresPerUser,
    perIp: config.deviceUserCodeMaxFailuresPerIp,
    windowMs: config.deviceUserCodeFailureWindowSeconds * 1000,
  };
  const counted = <A extends unknown[]>(start: (...args: A) => Promise<string>) => async (...args: A): Promise<string> => {
    const runId = await start(...args);
    metrics.runsStarted.inc();
    return runId;
  };

  const handlers = createHandlers({
    catalog,
    workflows: { published: workflows },
    runs: new RunLauncher({
      specs: catalog,
      findNode: resources.findNode,
      resolver: workflows,
      starter: { start: counted((request) => starter.start(request)), startFailed: counted((request, error) => starter.startFailed(request, error)) },
      events: bus,
      runs,
      recordCheckMs: config.streamRecordCheckMs,
    }),
    runRecords: { runs, events: bus, recordCheckMs: config.streamRecordCheckMs, finishedRunGraceMs: config.streamFinishedGraceMs },
    account: { tokens, users, organizations },
    editor: {
      workflows,
      memberships,
      specs: catalog,
      // Recipe assets: no run, no expiry (docs/workflows.md, "Recipe assets").
      assets: new WorkflowAssets({ store: resources.blobs.store, signer: resources.blobs.signer, publicBaseUrl: config.publicBaseUrl, recorder: resources.artifacts.recorderFor(null), fetchRemote: resources.fetchInput, maxBytes: config.fetch.maxBytes }),
    },
    deviceApproval: { authorizations, organizations, memberships, limiter: deviceLimiter, userCodeFailures },
  });
  const invoke = createInvoker({ handlers, tokenLimit: limits.tokenLimit, streamSlots: limits.streamSlots });
  const app = createApp({
    invoke,
    tokens,
    log,
    metrics,
    probes,
    bodyLimitBytes: config.bodyLimitBytes,
    uploadLimitBytes: config.fetch.maxBytes,
    trustProxy: config.trustProxy,
    ipLimit: limits.ipLimit,
    publicBaseUrl: config.publicBaseUrl,
    heartbeatMs: config.sseHeartbeatMs,
    extraRoutes: [
      createBlobRouter({ store: resources.blobs.store, signer: resources.blobs.signer, workflowLive: (id) => workflows.isLive(id) }),
      createDeviceRouter({
        users,
        organizations,
        tokens,
        authorizations,
        memberships,
        limiter: deviceLimiter,
        verificationUrl: config.deviceVerificationUrl,
        deviceCodeTtlSeconds: config.deviceCodeTtlSeconds,
        pollIntervalSeconds: config.devicePollIntervalSeconds,
        sessionTokenTtlDays: config.sessionTokenTtlDays,
        userCodeFailures,
      }),
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
  metrics.observeQueue(async () => ({ ...(await resources.queue.counts()) }));
  return {
    app,
    invoke,
    async close() {
      // Before Redis closes: stream leases are given back, token usage written.
      await limits.close();
      await usage.close();
    },
  };
}
