import { createStudioRouter, TokenCache, createApiLimits, createApp, TokenUsageRecorder, createHandlers, type TokenLimit, createInvoker, type Invoke, McpCancellations, createMcpRouter, createBrowserSessions, createBlobRouter, createProviderWebhookRouter, createBatchResultsRouter, createDeviceRouter, createMcpOAuthRouters, createSessionRouter } from '../api';
import type { Express, Router } from 'express';
import { Uploads } from '../nodes/uploads';
import { WorkflowAssets } from '../nodes/workflow-assets';
import { AddressAllowList, blockedReason } from '../platform/address-policy';
import net from 'node:net';
import { text } from 'node:stream/consumers';
import { publishBatchStart, publishProviderJobEnd, RateLimiter, withTimeout } from '../queue';
import { ProviderWebhookUrls } from '../platform/provider-webhook-urls';
import { BatchLauncher, ScheduleLauncher } from '../runs';
import { runLauncher } from './run-launching';
import { BatchResultsUrls } from '../platform/batch-results-urls';
import { AppError } from '../platform/app-error';
import { uploadPrefix } from '../nodes/uploads';
import { BlobNotFoundError } from '../blobs';
import type { ServiceResources } from './service-resources';
import { BatchRepository, ScheduleRepository, DeviceAuthorizationRepository, findTokenByHash, RunCosts, WebhookRepository, MembershipRepository, OAuthRepository, OrganizationRepository, TokenChangeListener, TokenRepository, tokensRevokedHere, UserRepository } from '../store';
import { readinessProbes } from './monitor-app';

/**
 * The check of a Webhook-Url a run is started with: a host written as an address that is not
 * public (and not allowed by FETCH_ALLOW_PRIVATE) is refused at once, as a 400; a host name is
 * resolved and vetted at each delivery (a refusal is then the delivery's error, on the run).
 */
function webhookUrlProblem(allow: AddressAllowList): (url: string) => string | null {
  return (raw) => {
    const url = new URL(raw);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!net.isIP(host)) return null;
    const reason = blockedReason(host);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return reason && !allow.allows(host, host, port) ? `names ${host}, ${reason}; webhooks are sent only to public addresses` : null;
  };
}

/** The API side of the service. */
export interface BuiltApi {
  app: Express;
  /** The call path under the HTTP routes, for in-process surfaces (the hosted MCP server). */
  invoke: Invoke;
  /** Flushes token usage, gives back stream slots; the resources close after. */
  close(): Promise<void>;
}

/** Most token records one API process remembers (about 300 bytes each). */
const TOKEN_CACHE_ENTRIES = 10_000;

/**
 * Token lookups through the process' cache, told of every change: by Postgres' notifications
 * (any process, any path, cascades included) and at once by this process' own revocations.
 */
function cachedTokenLookups(resources: ServiceResources) {
  const { config, log, metrics } = resources;
  const cache = new TokenCache({
    load: (hash) => findTokenByHash(resources.database.pool, hash),
    ttlMs: config.tokenCacheSeconds * 1000,
    maxEntries: TOKEN_CACHE_ENTRIES,
    observe: (result) => metrics.tokenLookups.inc({ result }),
  });
  if (config.tokenCacheSeconds === 0) return { findByHash: (hash: string) => cache.findByHash(hash), peek: () => undefined, close: async () => undefined };
  const listener = new TokenChangeListener({
    databaseUrl: config.databaseUrl,
    handlers: { changed: (hash) => cache.changed(hash), listening: (heard) => cache.listening(heard) },
    onError: (err) => log.warn({ err }, 'token changes not heard: token lookups read Postgres until the listener is back'),
  });
  const revokedHere = () => cache.clear();
  tokensRevokedHere.subscribe(revokedHere);
  listener.start();
  return {
    findByHash: (hash: string) => cache.findByHash(hash),
    peek: (hash: string) => cache.peek(hash),
    async close() {
      tokensRevokedHere.unsubscribe(revokedHere);
      await listener.close();
    },
  };
}

/** The account stores the API's routes share. */
function accountStores(resources: ServiceResources) {
  const { config, log, redis } = resources;
  const prisma = resources.database.prisma;
  const tokenRows = new TokenRepository(prisma);
  const usage = new TokenUsageRecorder({ store: tokenRows, intervalMs: config.tokenUsageFlushSeconds * 1000, log });
  const tokenCache = cachedTokenLookups(resources);
  return {
    tokenRows,
    usage,
    tokenCache,
    // The token store as routes see it: lookups (every request makes one; cached, see
    // docs/auth.md) note each accepted token for `last_used_at`.
    tokens: {
      findByHash: (hash: string) => tokenCache.findByHash(hash),
      peek: (hash: string) => tokenCache.peek(hash),
      noteUsed: (tokenId: string) => usage.note(tokenId),
      findById: (id: string) => tokenRows.findById(id),
      create: (input: Parameters<TokenRepository['create']>[0]) => tokenRows.create(input),
      listForUser: (userId: string, filter: { orgId?: string }) => tokenRows.listForUser(userId, filter),
      revoke: (id: string, revokeOptions: { userId?: string }) => tokenRows.revoke(id, revokeOptions),
    },
    users: new UserRepository(prisma),
    organizations: new OrganizationRepository(prisma),
    memberships: new MembershipRepository(prisma),
    authorizations: new DeviceAuthorizationRepository(prisma),
    deviceLimiter: new RateLimiter({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'device-login attempts not counted (Redis did not answer)') }),
    userCodeFailures: {
      perUser: config.deviceUserCodeMaxFailuresPerUser,
      perIp: config.deviceUserCodeMaxFailuresPerIp,
      windowMs: config.deviceUserCodeFailureWindowSeconds * 1000,
    },
  };
}

type AccountStores = ReturnType<typeof accountStores>;

/**
 * Reads a batch's rows file: the ref of one of the organization's uploads (`POST /v1/uploads`),
 * read from the blob store under its signature; anything else is a 400 naming what to send.
 */
function rowsFileReader(resources: ServiceResources): (ref: string, orgId: string) => Promise<string> {
  const { config, blobs } = resources;
  const base = `${config.publicBaseUrl.replace(/\/+$/, '')}/blobs/`;
  return async (ref, orgId) => {
    const refuse = (why: string) => new AppError({ code: 'bad_request', message: `rowsFile ${why}; upload the JSON Lines or CSV file with POST /v1/uploads and pass the "ref" it answers` });
    let url: URL;
    try {
      url = new URL(ref);
    } catch {
      throw refuse('is not a URL');
    }
    const key = ref.startsWith(base) ? decodeURIComponent(url.pathname.slice(new URL(base).pathname.length)) : '';
    if (!key.startsWith(`${uploadPrefix(orgId)}/`)) throw refuse("is not the ref of one of your organization's uploads");
    const check = blobs.signer.verify(key, url.searchParams.get('expires') ?? undefined, url.searchParams.get('signature') ?? undefined);
    if (!check.ok) throw refuse(check.reason === 'expired' ? 'has expired' : 'does not carry a valid signature (pass the ref exactly as the upload answered it)');
    try {
      return await text((await blobs.store.get(key)).body);
    } catch (err) {
      if (err instanceof BlobNotFoundError) throw refuse('names an upload that no longer exists');
      throw err;
    }
  };
}

/**
 * The routers beside the declared routes: blob downloads, RFC 8628 device login and its approval
 * page, the editor's cookie session, the MCP clients' OAuth authorization server, the hosted MCP
 * server.
 */
function besideRoutes(resources: ServiceResources, accounts: AccountStores, tokenLimit: TokenLimit | undefined, invoke: Invoke, cancellations: McpCancellations): Router[] {
  const { config, log, redis, blobs, workflows } = resources;
  const { tokens, users, organizations, memberships } = accounts;
  // One sign-in for the editor's JSON route and the approval page: one failure budget, one cookie.
  const browserSessions = createBrowserSessions({
    users,
    memberships,
    organizations,
    sessions: accounts.tokenRows,
    limiter: new RateLimiter({ redis, prefix: config.redisPrefix, onError: (err) => log.warn({ err }, 'failed sign-ins not counted (Redis did not answer)') }),
    sessionHours: config.browserSessionHours,
    maxFailuresPerEmail: config.signInMaxFailuresPerEmail,
    maxFailuresPerIp: config.signInMaxFailuresPerIp,
    failureWindowSeconds: config.signInFailureWindowSeconds,
  });
  return [
    createBlobRouter({ store: blobs.store, signer: blobs.signer, workflowLive: (id) => workflows.isLive(id) }),
    createDeviceRouter({
      users,
      organizations,
      tokens,
      authorizations: accounts.authorizations,
      memberships,
      limiter: accounts.deviceLimiter,
      verificationUrl: config.deviceVerificationUrl,
      deviceCodeTtlSeconds: config.deviceCodeTtlSeconds,
      pollIntervalSeconds: config.devicePollIntervalSeconds,
      grants: new OAuthRepository(resources.database.prisma),
      resource: config.publicBaseUrl.replace(/\/+$/, ''),
      sessionTokenTtlSeconds: config.sessionTokenTtlSeconds,
      sessionRefreshTokenTtlDays: config.sessionRefreshTokenTtlDays,
      sessionMaxAgeDays: config.sessionMaxAgeDays,
      userCodeFailures: accounts.userCodeFailures,
    }),
    createSessionRouter({ browserSessions, users, memberships, sessions: accounts.tokenRows, tokens, tokenLimit }),
    // The hosted MCP server: its 401 names the protected resource metadata the OAuth routers serve.
    createMcpRouter({ invoke, tokens, log, cancellations, bodyLimitBytes: config.bodyLimitBytes, resourceMetadataUrl: `${config.publicBaseUrl.replace(/\/+$/, '')}/.well-known/oauth-protected-resource` }),
    ...createMcpOAuthRouters({ config, oauth: new OAuthRepository(resources.database.prisma), tokens, memberships, organizations, limiter: accounts.deviceLimiter, log, studioDir: config.studioDir }),
  ];
}

/**
 * The API over the shared resources: the handlers of every declared route, `invoke` over them
 * with the configured limits, and the Express app adapting it to HTTP beside the blob, session
 * and device-login routers.
 */
export function buildApi(resources: ServiceResources, options: { isDraining?: () => boolean } = {}): BuiltApi {
  const { config, log, metrics, redis, runs, bus, catalog, workflows } = resources;
  const accounts = accountStores(resources);
  const { tokens, users, organizations, memberships } = accounts;
  const limits = createApiLimits(config, redis, metrics, log);
  const launcher = runLauncher(resources);
  const costs = new RunCosts(resources.database);
  const batches = new BatchRepository(resources.database);
  const schedules = new ScheduleRepository(resources.database);
  const resultsUrls = new BatchResultsUrls({ baseUrl: config.publicBaseUrl, secret: config.blobSigningSecret, ttlSeconds: config.blobUrlTtlSeconds });
  const webhookProblem = webhookUrlProblem(new AddressAllowList(config.fetch.allowPrivate));
  const handlers = createHandlers({
    catalog,
    workflows: { published: workflows },
    runs: launcher,
    costs,
    runRecords: { runs, cancel: (runId, error) => resources.lifecycle.failWithin(runId, error, config.requestRedisWaitMs, { cancelled: true }), events: bus, recordCheckMs: config.streamRecordCheckMs, finishedRunGraceMs: config.streamFinishedGraceMs, redisWaitMs: config.requestRedisWaitMs },
    account: { tokens, users, organizations },
    editor: {
      workflows,
      memberships,
      specs: catalog,
      // Recipe assets: no run, no expiry (docs/workflows.md, "Recipe assets").
      assets: new WorkflowAssets({ store: resources.blobs.store, signer: resources.blobs.signer, publicBaseUrl: config.publicBaseUrl, recorder: resources.artifacts.recorderFor(null), fetchRemote: resources.fetchInput, maxBytes: config.fetch.maxBytes }),
      assetMaxBytes: config.fetch.maxBytes,
    },
    // Uploads: no run, the run artifacts' expiry (docs/uploads.md).
    uploads: {
      uploads: new Uploads({ store: resources.blobs.store, signer: resources.blobs.signer, publicBaseUrl: config.publicBaseUrl, recorder: resources.artifacts.recorderFor(null), retentionSeconds: config.artifactRetentionDays * 86_400 }),
      maxBytes: config.uploadMaxBytes,
    },
    webhooks: { secrets: new WebhookRepository(resources.database), memberships },
    queue: { statusOf: (orgId) => resources.queue.orgStatus(orgId), defaultLimit: config.orgStepConcurrency, providerWaitsOf: (orgId) => resources.providerLimiter.waitingOf(orgId) },
    webhookUrlProblem: webhookProblem,
    batches: {
      launcher: new BatchLauncher({
        runs: launcher,
        batches,
        nodes: { find: resources.findNode, mayRunInline: resources.mayRunInline },
        readRowsFile: rowsFileReader(resources),
        availableMicros: (orgId) => costs.availableMicros(orgId),
        onStored: (batchId) => {
          metrics.batchesCreated.inc();
          void publishBatchStart(redis, config.redisPrefix, batchId).catch((err: unknown) => log.warn({ err, batchId }, 'could not announce a new batch to the workers; their sweep finds it'));
        },
      }),
      batches,
      cancelRun: (runId, error) => resources.lifecycle.failWithin(runId, error, config.requestRedisWaitMs, { cancelled: true }),
      // The workers' sweep finds a batch not announced: the request does not wait for Redis long.
      announce: (batchId) => withTimeout(publishBatchStart(redis, config.redisPrefix, batchId), config.requestRedisWaitMs, 'batch announcement'),
      results: resultsUrls,
      streamPollMs: config.batchStreamPollMs,
      webhookUrlProblem: webhookProblem,
    },
    schedules: {
      launcher: new ScheduleLauncher({ runs: launcher, schedules, minIntervalSeconds: config.scheduleMinIntervalSeconds }),
      schedules,
      webhookUrlProblem: webhookProblem,
    },
    deviceApproval: { authorizations: accounts.authorizations, organizations, memberships, limiter: accounts.deviceLimiter, userCodeFailures: accounts.userCodeFailures },
  });
  const invoke = createInvoker({
    handlers,
    tokenLimit: limits.tokenLimit,
    streamSlots: limits.streamSlots,
    observe: (name, outcome) => metrics.operationCalls.inc({ operation: name, outcome }),
  });
  if (!resources.channels) throw new Error('the API needs resources built with subscribe: true');
  const cancellations = new McpCancellations({ redis, channels: resources.channels, prefix: config.redisPrefix, log });
  // Subscribed once for the process; until Redis answers, a cancellation is missed as if lost.
  cancellations.start().catch((err: unknown) => log.warn({ err }, 'not subscribed to MCP cancellations'));
  const app = createApp({
    invoke,
    tokens,
    log,
    metrics,
    probes: readinessProbes(resources),
    isDraining: options.isDraining,
    bodyLimitBytes: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    ipLimit: limits.ipLimit,
    tokenLimit: limits.tokenLimit,
    publicBaseUrl: config.publicBaseUrl,
    heartbeatMs: config.sseHeartbeatMs,
    extraRoutes: [createBatchResultsRouter({ urls: resultsUrls, batches }), ...besideRoutes(resources, accounts, limits.tokenLimit, invoke, cancellations)],
    // Served whatever PROVIDER_WEBHOOK_BASE_URL says here: the workers that gave providers these URLs may be configured apart.
    uncountedRoutes: [
      createProviderWebhookRouter({
        urls: new ProviderWebhookUrls({ baseUrl: config.providerWebhookBaseUrl || config.publicBaseUrl, secret: config.blobSigningSecret }),
        announce: (jobKey) => publishProviderJobEnd(redis, config.redisPrefix, jobKey),
        observe: (provider, outcome) => metrics.providerWebhooks.inc({ provider, outcome }),
      }),
    ],
    // `/device`: the studio's device approval page, the verification URL `svc login` opens.
    siteRoutes: [createStudioRouter({ dir: resources.config.studioDir, extraPages: ['/device'] })],
  });
  return {
    app,
    invoke,
    async close() {
      // Before Redis closes: stream leases are given back, token usage written.
      await limits.close();
      await accounts.usage.close();
      await accounts.tokenCache.close();
      await cancellations.close();
    },
  };
}
