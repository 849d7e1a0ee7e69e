import path from 'node:path';
import { AddressAllowList } from './address-policy';
import { parseProviderLimits } from './provider-limit-settings';
import { baseUrl, bool, int, nameList, nonEmptyNameList, oneOf, priceList, secret, SettingError, text, tokenPriceTable, url, verbatim } from './setting-parsers';

export type { TokenPrice } from './setting-parsers';

/**
 * The one place that reads the environment. Every setting is declared once, in `SETTINGS`: its
 * environment variable, its default, a description, how to parse it and where it sits in
 * `Config` (a type derived from the table). `loadConfig` validates all of them at start-up and
 * fails with a message naming each variable that is missing or malformed.
 */

type Env = Record<string, string | undefined>;

export type Role = 'all' | 'api' | 'worker';
export type BlobDriver = 'fs' | 's3';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * A described setting: its variable, its default (absent = required), how to read it, and where
 * its value sits in `Config`: `path` (`group.field`) when it belongs to a group, else its own key.
 */
interface Setting<T> {
  env: string;
  description: string;
  default?: string | ((env: Env) => string | undefined);
  parse: (raw: string) => T;
  path?: `${string}.${string}`;
}

/** Every setting the service reads. The README's configuration table mirrors this list. */
export const SETTINGS = {
  role: { env: 'ROLE', description: 'What this process runs: all (API + step worker), api, or worker', default: 'all', parse: oneOf<Role>('all', 'api', 'worker') },
  host: { env: 'HOST', description: 'Interface the HTTP server binds to', default: '127.0.0.1', parse: text },
  port: { env: 'PORT', description: 'HTTP port of the API (0 picks a free one)', default: '8080', parse: int(0, 65535) },
  tracesExporter: {
    env: 'OTEL_TRACES_EXPORTER',
    description: 'Where spans go: none (no tracing), otlp (OTEL_EXPORTER_OTLP_* say where and how, read by the OpenTelemetry SDK) or console',
    default: 'none',
    parse: oneOf<'none' | 'otlp' | 'console'>('none', 'otlp', 'console'),
  },
  tracesServiceName: { env: 'OTEL_SERVICE_NAME', description: 'service.name of the spans', default: 'svc-workflow-service', parse: text },
  metricsPort: {
    env: 'METRICS_PORT',
    description: 'Port of a worker process (ROLE=worker) for GET /metrics, /healthz and /readyz, on HOST (0 picks a free one; API processes serve them on PORT)',
    default: '9464',
    parse: int(0, 65535),
  },
  publicBaseUrl: {
    env: 'PUBLIC_BASE_URL',
    description: 'Base URL clients use to reach this service (blob URLs and printed links are built from it)',
    default: (env: Env) => `http://127.0.0.1:${env.PORT ?? '8080'}`,
    parse: baseUrl,
  },
  databaseUrl: { env: 'DATABASE_URL', description: 'Postgres connection URL', parse: url('postgres:', 'postgresql:') },
  databasePoolSize: { path: 'database.poolSize', env: 'DATABASE_POOL_SIZE', description: 'Postgres connections one process opens at most', default: '10', parse: int(1, 1000) },
  databaseCreationsPerOrg: {
    path: 'database.creationsPerOrg',
    env: 'RUN_CREATIONS_PER_ORG',
    description: "Run-creation transactions of one organization that one process sends to Postgres at once (each locks the organization's row; creations arriving meanwhile wait in the process, then go together, up to 32 per transaction)",
    default: '4',
    parse: int(1, 1000),
  },
  databaseSettlementsPerOrg: {
    path: 'database.settlementsPerOrg',
    env: 'RUN_SETTLEMENTS_PER_ORG',
    description: "Transactions of one organization's run-finishing step commits that one process sends to Postgres at once (each writes the organization's row; commits arriving meanwhile wait in the process, then go together, up to 32 per transaction)",
    default: '1',
    parse: int(1, 1000),
  },
  databaseConnectTimeoutMs: {
    path: 'database.connectTimeoutMs',
    env: 'DATABASE_CONNECT_TIMEOUT_MS',
    description: 'Longest wait for a Postgres connection, opening one or waiting for a busy pool to free one (then the request is answered 503 with Retry-After)',
    default: '5000',
    parse: int(100, 600_000),
  },
  databaseQueryTimeoutMs: {
    path: 'database.queryTimeoutMs',
    env: 'DATABASE_QUERY_TIMEOUT_MS',
    description: 'Longest wait for a Postgres statement\'s answer (a server gone silent, a network blackhole); then the connection is dropped and the request answered 503',
    default: '30000',
    parse: int(100, 3_600_000),
  },
  redisUrl: { env: 'REDIS_URL', description: 'Redis connection URL (BullMQ queues, event bus, rate limits)', parse: url('redis:', 'rediss:') },
  requestRedisWaitMs: {
    env: 'REQUEST_REDIS_WAIT_MS',
    description: "Longest a request waits for Redis while Redis is unreachable, where it must: a new run's first event (then the run is failed unstarted and the request answered 503 unavailable) and its first steps' enqueue (then the reaper enqueues them), a cancelled run's events (then the cancel is answered; they follow when Redis is back), a run event stream's log position (then 503 unavailable)",
    default: '5000',
    parse: int(100, 120_000),
  },
  dataDir: { env: 'DATA_DIR', description: 'Directory for local state (dev token, filesystem blobs)', default: '.data', parse: text },
  blobDriver: {
    env: 'BLOB_DRIVER',
    description: 'Blob storage driver: fs (local directory) or s3 (any S3-compatible server)',
    default: (env: Env) => (env.S3_ENDPOINT ? 's3' : 'fs'),
    parse: oneOf<BlobDriver>('fs', 's3'),
  },
  blobDir: { env: 'BLOB_DIR', description: 'Directory of the fs blob driver', default: (env: Env) => path.join(env.DATA_DIR ?? '.data', 'blobs'), parse: text },
  blobSigningSecret: { env: 'BLOB_SIGNING_SECRET', description: 'HMAC secret for signed blob URLs (32+ characters, the same on every replica)', parse: secret },
  blobUrlTtlSeconds: { env: 'BLOB_URL_TTL_SECONDS', description: 'Lifetime of a signed blob URL, except those of run artifacts (which expire with the artifact)', default: '86400', parse: int(60, 30 * 86400) },
  artifactRetentionDays: { env: 'ARTIFACT_RETENTION_DAYS', description: 'Days a run artifact is kept after it is stored, then deleted by the retention sweeper', default: '30', parse: int(1, 3650) },
  outputCacheMaxEntries: { env: 'OUTPUT_CACHE_MAX_ENTRIES', description: "Output cache entries one organization keeps (docs/runs.md, Output caching); storing one more evicts its least recently used", default: '10000', parse: int(1, 10_000_000) },
  outputCacheTtlSeconds: { env: 'OUTPUT_CACHE_TTL_SECONDS', description: "Longest an output cache entry is used after it was stored; an entry naming files lives at most their retention less this, so a hit's links stay valid this long", default: '604800', parse: int(60, 365 * 86_400) },
  outputCacheMaxEntryBytes: { env: 'OUTPUT_CACHE_MAX_ENTRY_BYTES', description: "Largest step outputs (as JSON; files count by their links) the output cache stores; larger ones are not cached", default: String(256 * 1024), parse: int(1024, 64 * 1024 * 1024) },
  retentionSweepIntervalSeconds: { env: 'RETENTION_SWEEP_INTERVAL_SECONDS', description: 'Seconds between retention sweeps (each deletes every expired run artifact)', default: '3600', parse: int(10, 86400) },
  s3Endpoint: { path: 's3.endpoint', env: 'S3_ENDPOINT', description: 'S3 endpoint URL, e.g. http://127.0.0.1:9000 (required when BLOB_DRIVER=s3)', default: '', parse: (raw: string) => (raw === '' ? '' : url('http:', 'https:')(raw)) },
  s3AccessKey: { path: 's3.accessKey', env: 'S3_ACCESS_KEY', description: 'S3 access key', default: '', parse: verbatim },
  s3SecretKey: { path: 's3.secretKey', env: 'S3_SECRET_KEY', description: 'S3 secret key', default: '', parse: verbatim },
  s3Bucket: { path: 's3.bucket', env: 'S3_BUCKET', description: 'S3 bucket for run artifacts', default: 'svc-artifacts', parse: text },
  s3Region: { path: 's3.region', env: 'S3_REGION', description: 'S3 region', default: 'us-east-1', parse: text },
  rateLimitTokenPerMinute: { env: 'RATE_LIMIT_TOKEN_PER_MINUTE', description: 'Requests per minute one access token may make, across all API replicas (then 429); 0 disables', default: '600', parse: int(0, 10_000_000) },
  rateLimitIpPerMinute: { env: 'RATE_LIMIT_IP_PER_MINUTE', description: 'Requests per minute from one client IP address (anonymous ones included), across all API replicas (then 429); 0 disables', default: '1200', parse: int(0, 10_000_000) },
  maxOpenStreamsPerOrg: { env: 'MAX_OPEN_STREAMS_PER_ORG', description: 'Run event streams (and runs.node calls) one organization may hold open at once, across all API replicas (then 429); 0 disables', default: '100', parse: int(0, 1_000_000) },
  httpHeadersTimeoutMs: { path: 'http.headersTimeoutMs', env: 'HTTP_HEADERS_TIMEOUT_MS', description: "Time a client has to send a request's headers (then 408 and the connection is closed)", default: '20000', parse: int(1000, 600_000) },
  httpRequestTimeoutMs: { path: 'http.requestTimeoutMs', env: 'HTTP_REQUEST_TIMEOUT_MS', description: 'Time a client has to send a whole request, body included (then 408); responses such as event streams are not limited', default: '60000', parse: int(1000, 3_600_000) },
  httpKeepAliveTimeoutMs: { path: 'http.keepAliveTimeoutMs', env: 'HTTP_KEEP_ALIVE_TIMEOUT_MS', description: 'Idle time after which a keep-alive connection is closed (keep it above the load balancer\'s idle timeout)', default: '65000', parse: int(1000, 600_000) },
  httpMaxHeaderBytes: { path: 'http.maxHeaderBytes', env: 'HTTP_MAX_HEADER_BYTES', description: 'Largest request header section in bytes (larger is 431)', default: '16384', parse: int(1024, 1024 * 1024) },
  uploadMaxBytes: { env: 'UPLOAD_MAX_BYTES', description: 'Largest file POST /v1/uploads takes, bytes (larger is 413)', default: String(100 * 1024 * 1024), parse: int(1, 64 * 1024 * 1024 * 1024) },
  studioDir: { env: 'STUDIO_DIR', description: 'Directory of the built studio (index.html and studio-assets/) the API serves at /', default: 'services/studio/dist', parse: text },
  bodyLimitBytes: { env: 'BODY_LIMIT_BYTES', description: 'Largest accepted JSON request body (larger is 413)', default: String(2 * 1024 * 1024), parse: int(1024, 64 * 1024 * 1024) },
  workerConcurrency: { env: 'WORKER_CONCURRENCY', description: "Step jobs one worker process runs on its own work at once: local steps (utilities, local models), and provider steps before and after their calls; a step waiting on a provider lends its slot back (PROVIDER_STEP_CONCURRENCY)", default: '16', parse: int(1, 1000) },
  providerStepConcurrency: { env: 'PROVIDER_STEP_CONCURRENCY', description: "Steps one worker process may have waiting on providers at once, outside its WORKER_CONCURRENCY slots (each costs a promise and a socket, about 40 KB (B11); docs/operations.md, Provider-bound work); 0: a waiting step keeps its slot", default: '2000', parse: int(0, 100_000) },
  logLevel: { env: 'LOG_LEVEL', description: 'pino log level', default: 'info', parse: oneOf<LogLevel>('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent') },
  trustProxy: { env: 'TRUST_PROXY', description: 'Trust X-Forwarded-* headers (behind a load balancer)', default: 'false', parse: bool },
  shutdownGraceMs: { env: 'SHUTDOWN_GRACE_MS', description: 'How long a stopping process waits for in-flight work', default: '10000', parse: int(0, 600000) },
  redisCluster: {
    env: 'REDIS_CLUSTER',
    description: 'REDIS_URL names one node of a Redis Cluster (the others are discovered); every key, queue and channel name then starts with the prefix as a hash tag, {REDIS_PREFIX}, as BullMQ requires',
    default: 'false',
    parse: bool,
  },
  redisPrefix: {
    env: 'REDIS_PREFIX',
    description: 'Namespace of every Redis key, queue and channel (deployments sharing a Redis need different ones)',
    default: 'svc',
    parse: (raw: string) => {
      if (!/^[a-z0-9][a-z0-9_-]{0,39}$/i.test(raw)) throw new SettingError(`must be 1-40 letters, digits, "_" or "-", got "${raw}"`);
      return raw;
    },
  },
  stepRetryAttempts: { env: 'STEP_RETRY_ATTEMPTS', description: 'Attempts of a step whose provider call failed transiently (a timeout, a break once sent, a stream broken off), the first included; 429 and 5xx are retried by the provider HTTP client alone', default: '3', parse: int(1, 10) },
  stepMaxAttempts: { env: 'STEP_MAX_ATTEMPTS', description: 'Attempts of one step in all (in-step retries and redeliveries after a lost worker together); then the step fails with step_attempts_exhausted', default: '5', parse: int(1, 20) },
  stepRetryBaseMs: { env: 'STEP_RETRY_BASE_MS', description: 'Delay before the first retry of a step; doubled for each further one', default: '500', parse: int(0, 60000) },
  stepLockMs: { env: 'STEP_LOCK_MS', description: 'Lock of a running step job; a worker silent this long is presumed dead and its step redelivered', default: '30000', parse: int(1000, 600000) },
  reaperIntervalSeconds: { env: 'REAPER_INTERVAL_SECONDS', description: 'Seconds between sweeps of the stuck-run reaper (lost jobs, unfinished runs)', default: '30', parse: int(1, 3600) },
  stepStuckSeconds: { env: 'STEP_STUCK_SECONDS', description: 'A running step without a live job for this long is re-enqueued by the reaper', default: '120', parse: int(5, 86400) },
  streamRecordCheckMs: { env: 'STREAM_RECORD_CHECK_MS', description: "A run event stream silent this long reads the run's record; a run found finished there with no terminal event after one more such silence gets its terminal event from the record", default: '10000', parse: int(100, 600_000) },
  sseHeartbeatMs: { env: 'SSE_HEARTBEAT_MS', description: 'Interval of the comment lines that keep an idle event stream open through proxies', default: '15000', parse: int(10, 600_000) },
  streamFinishedGraceMs: { env: 'STREAM_FINISHED_GRACE_MS', description: "A replay of a finished run whose log lacks the terminal event waits this long for it, then sends the one the run's record implies", default: '2000', parse: int(50, 600_000) },
  batchFeedIntervalMs: { env: 'BATCH_FEED_INTERVAL_MS', description: "Interval of each worker's batch feeder: how often every unfinished batch is given a turn (settle ended rows, start new ones); a run of a batch ending on a worker gives its batch a turn at once", default: '250', parse: int(10, 60_000) },
  batchFeedIdleMs: { env: 'BATCH_FEED_IDLE_MS', description: "How long each worker's batch feeder waits after finding no unfinished batch; a batch stored or retried is announced to the workers at once, so this bounds only a lost announcement", default: '2000', parse: int(10, 600_000) },
  batchFeedGapMs: {
    env: 'BATCH_FEED_GAP_MS',
    description: "The least time between two turns of one batch on a worker: the runs of its rows ending meanwhile are settled together by the next turn",
    default: '50',
    parse: int(0, 10_000),
  },
  batchFeedRows: { env: 'BATCH_FEED_ROWS', description: "Rows one turn of a batch starts at most, and the most of its organization's batch rows left waiting their turn in the fair dispatch after it (a batch's concurrency bounds its rows in flight)", default: '200', parse: int(1, 5_000) },
  batchBundleRows: {
    env: 'BATCH_BUNDLE_ROWS',
    description: "Batch rows whose one first step is a quick local node go this many to a step job (a bundle: one queue entry and one worker slot for all of them, run side by side); 1: a job per row. While interactive work is under way, a job per row",
    default: '16',
    parse: int(1, 256),
  },
  batchStreamPollMs: { env: 'BATCH_STREAM_POLL_MS', description: "How often a batch's progress stream (GET /v1/batches/:id/events) asks Postgres for rows ended since", default: '500', parse: int(50, 60_000) },
  scheduleSweepMs: { env: 'SCHEDULE_SWEEP_MS', description: "Interval of each worker's schedule ticker: how often due schedules are looked for (a tick's run starts at most this late)", default: '1000', parse: int(50, 60_000) },
  scheduleMinIntervalSeconds: {
    env: 'SCHEDULE_MIN_INTERVAL_SECONDS',
    description: 'The shortest time between two ticks of a schedule; under 60, cron expressions may have a seconds field (six fields)',
    default: '60',
    parse: int(1, 86_400),
  },
  webhookPollMs: { env: 'WEBHOOK_POLL_MS', description: "Interval of each worker's webhook dispatcher: how soon a run's new events are sent to its webhook", default: '500', parse: int(50, 60_000) },
  webhookTimeoutMs: { env: 'WEBHOOK_TIMEOUT_MS', description: 'Time a webhook receiver has to answer one delivery; longer is a failed attempt', default: '10000', parse: int(100, 120_000) },
  webhookRetryDelaysMs: {
    env: 'WEBHOOK_RETRY_DELAYS_MS',
    description: 'Waits before the retries of a failed webhook delivery, ms, comma-separated; the last repeats until WEBHOOK_GIVE_UP_SECONDS after the first attempt',
    default: '5000,30000,120000,600000,1800000,3600000,7200000,14400000,28800000',
    parse: (raw: string): number[] => {
      const delays = raw.split(',').map((d) => d.trim()).filter((d) => d !== '').map(int(1, 86_400_000));
      if (delays.length === 0) throw new SettingError('give at least one delay');
      return delays;
    },
  },
  webhookLeaseMs: { env: 'WEBHOOK_LEASE_MS', description: "How long a worker holds a run's webhook it is delivering; a worker that dies holding one leaves it to another after this", default: '60000', parse: int(1000, 3_600_000) },
  webhookGiveUpSeconds: { env: 'WEBHOOK_GIVE_UP_SECONDS', description: 'A webhook delivery still failing this long after its first attempt is given up on (and the next event sent)', default: '86400', parse: int(1, 7 * 86_400) },
  fairScheduling: { env: 'FAIR_SCHEDULING', description: 'Step jobs wait in a list per organization and enter the queue round robin, so that one organization flooding the queue cannot starve the others (docs/scheduling.md); false: one FIFO queue', default: 'true', parse: bool },
  fairDispatchWindow: { env: 'FAIR_DISPATCH_WINDOW', description: "Under fair scheduling, step jobs waiting in BullMQ's queue at most (the rest wait their organization's turn): a new organization's first step waits behind at most this many; keep it at or above the fleet's total WORKER_CONCURRENCY so that no worker idles", default: '32', parse: int(1, 100_000) },
  batchSlotsWhileInteractive: {
    env: 'BATCH_SLOTS_WHILE_INTERACTIVE',
    description: "Under fair scheduling, batch rows' step jobs queued or running at once, across all workers and batches, while interactive work is under way (an interactive step dispatched in the last INTERACTIVE_QUIET_MS): what batches take of the fleet beside interactive runs; 0: no limit",
    default: '1',
    parse: int(0, 100_000),
  },
  batchGapWhileInteractiveMs: {
    env: 'BATCH_GAP_WHILE_INTERACTIVE_MS',
    description: "Under fair scheduling, while interactive work is under way, the least time between two dispatches of batch rows' step jobs, across all workers: with BATCH_SLOTS_WHILE_INTERACTIVE, what CPU batches take beside interactive runs; 0: none",
    default: '50',
    parse: int(0, 60_000),
  },
  interactiveQuietMs: {
    env: 'INTERACTIVE_QUIET_MS',
    description: 'How long after the last interactive step was dispatched batches get the whole fleet again (BATCH_SLOTS_WHILE_INTERACTIVE)',
    default: '250',
    parse: int(10, 60_000),
  },
  orgStepConcurrency: { env: 'ORG_STEP_CONCURRENCY', description: "Under fair scheduling, step jobs of one organization queued or running at once, across all workers; 0: no limit", default: '64', parse: int(0, 1_000_000) },
  orgLimitsSyncSeconds: { env: 'ORG_LIMITS_SYNC_SECONDS', description: "Interval of each worker's copy of organizations' own step concurrency limits (`admin org limit`) from Postgres into Redis: a change applies within this", default: '10', parse: int(1, 3600) },
  fairReconcileMs: { env: 'FAIR_RECONCILE_MS', description: "Interval of each worker's look at organizations parked at ORG_STEP_CONCURRENCY, freeing slots of jobs that ended without their release (a worker killed)", default: '1000', parse: int(100, 60_000) },
  deadlineSweepMs: { env: 'DEADLINE_SWEEP_MS', description: "Interval of each worker's sweep for runs past their own deadline (maxDurationSeconds), which it cancels: a deadline is kept to about this", default: '1000', parse: int(100, 60_000) },
  runTimeoutSeconds: { env: 'RUN_TIMEOUT_SECONDS', description: 'A run still unfinished this long after it started is failed with run_timeout', default: '3600', parse: int(10, 7 * 86400) },
  tokenCacheSeconds: { env: 'TOKEN_CACHE_SECONDS', description: "Longest an API process trusts its in-memory copy of an access token's record; revocations reach every process at once through Postgres notifications, this bounds a missed one (0: no cache, every request reads the token)", default: '30', parse: int(0, 3600) },
  tokenUsageFlushSeconds: { env: 'TOKEN_USAGE_FLUSH_SECONDS', description: "Seconds between writes of tokens' last-used times (coalesced per API process)", default: '15', parse: int(1, 3600) },
  browserSessionHours: { env: 'BROWSER_SESSION_HOURS', description: 'Lifetime of a web editor session (sign-in cookie), in hours', default: '336', parse: int(1, 90 * 24) },
  signInMaxFailuresPerEmail: { env: 'SIGN_IN_MAX_FAILURES_PER_EMAIL', description: 'Failed sign-ins for one email within the window before sign-in answers 429', default: '10', parse: int(1, 10000) },
  signInMaxFailuresPerIp: { env: 'SIGN_IN_MAX_FAILURES_PER_IP', description: 'Failed sign-ins from one client IP within the window before sign-in answers 429', default: '100', parse: int(1, 1000000) },
  signInFailureWindowSeconds: { env: 'SIGN_IN_FAILURE_WINDOW_SECONDS', description: 'Window over which failed sign-ins are counted', default: '900', parse: int(10, 86400) },
  deviceCodeTtlSeconds: { env: 'DEVICE_CODE_TTL_SECONDS', description: 'Lifetime of a device-login code (svc login), seconds', default: '900', parse: int(60, 3600) },
  devicePollIntervalSeconds: { env: 'DEVICE_POLL_INTERVAL_SECONDS', description: 'Seconds a device-login client waits between polls (each slow_down adds 5)', default: '5', parse: int(1, 60) },
  deviceVerificationUrl: {
    env: 'DEVICE_VERIFICATION_URL',
    description: 'Page where a person enters a device-login user code (the web editor\'s /device page)',
    default: (env: Env) => `${(env.PUBLIC_BASE_URL || `http://127.0.0.1:${env.PORT ?? '8080'}`).replace(/\/+$/, '')}/device`,
    parse: url('http:', 'https:'),
  },
  deviceUserCodeMaxFailuresPerUser: { env: 'DEVICE_USER_CODE_MAX_FAILURES_PER_USER', description: 'Wrong or stale device-login user codes one user may submit within the window before 429', default: '10', parse: int(1, 10000) },
  deviceUserCodeMaxFailuresPerIp: { env: 'DEVICE_USER_CODE_MAX_FAILURES_PER_IP', description: 'Wrong or stale device-login user codes one client IP may submit within the window before 429', default: '30', parse: int(1, 1000000) },
  deviceUserCodeFailureWindowSeconds: { env: 'DEVICE_USER_CODE_FAILURE_WINDOW_SECONDS', description: 'Window over which wrong device-login user codes are counted', default: '900', parse: int(10, 86400) },
  sessionTokenTtlSeconds: { env: 'SESSION_TOKEN_TTL_SECONDS', description: 'Lifetime of a device-login session token (svcs_), seconds; svc renews it with its refresh token', default: '3600', parse: int(60, 86400) },
  sessionRefreshTokenTtlDays: { env: 'SESSION_REFRESH_TOKEN_TTL_DAYS', description: 'Lifetime of a device login\'s refresh token (svcr_), days: a login unused this long ends; each refresh issues a new one', default: '30', parse: int(1, 365) },
  sessionMaxAgeDays: { env: 'SESSION_MAX_AGE_DAYS', description: 'Longest a device login (svc login) lasts however often it is refreshed, days', default: '90', parse: int(1, 365) },
  mcpAccessTokenTtlSeconds: { env: 'MCP_ACCESS_TOKEN_TTL_SECONDS', description: 'Lifetime of an access token issued to an MCP client by OAuth (svco_), seconds', default: '3600', parse: int(60, 86400) },
  mcpRefreshTokenTtlDays: { env: 'MCP_REFRESH_TOKEN_TTL_DAYS', description: 'Lifetime of an MCP client\'s refresh token (svcr_), days; each use replaces it with a new one', default: '30', parse: int(1, 365) },
  mcpAuthorizationCodeTtlSeconds: { env: 'MCP_AUTHORIZATION_CODE_TTL_SECONDS', description: 'Lifetime of an OAuth authorization code (single use), seconds', default: '120', parse: int(10, 600) },
  mcpClientRegistrationsPerIpPerHour: { env: 'MCP_CLIENT_REGISTRATIONS_PER_IP_PER_HOUR', description: 'OAuth dynamic client registrations one client IP may make per hour before 429', default: '20', parse: int(1, 100000) },
  openaiApiKey: { env: 'OPENAI_API_KEY', description: 'API key of OpenAI or an OpenAI-compatible server; empty leaves its nodes out of the catalog', default: '', parse: verbatim },
  openaiBaseUrl: { env: 'OPENAI_BASE_URL', description: 'Base URL of the OpenAI(-compatible) API, up to and including /v1', default: 'https://api.openai.com/v1', parse: baseUrl },
  providerTimeoutMs: { env: 'PROVIDER_TIMEOUT_MS', description: 'Longest one request to a hosted provider may take (headers and body), then it fails or is retried', default: '120000', parse: int(1000, 600_000) },
  openaiImagePrices: { env: 'OPENAI_IMAGE_PRICES', description: 'openai-image models and their worst-case price per image, micro-USD (model=micros,...); none: no openai-image node', default: 'gpt-image-1=250000', parse: priceList },
  openaiEmbeddingPrices: { env: 'OPENAI_EMBEDDING_PRICES', description: 'openai-embed models and their price per million input tokens, micro-USD; none: no openai-embed node', default: 'text-embedding-3-small=20000,text-embedding-3-large=130000', parse: priceList },
  openaiTtsPrices: { env: 'OPENAI_TTS_PRICES', description: 'openai-speech models and their price per million input characters, micro-USD; none: no openai-speech node', default: 'tts-1=15000000,tts-1-hd=30000000', parse: priceList },
  openaiTtsVoices: { env: 'OPENAI_TTS_VOICES', description: 'Voices the openai-speech node offers (comma list)', default: 'alloy,ash,coral,echo,fable,onyx,nova,sage,shimmer', parse: nameList },
  openaiTranscribePrices: { env: 'OPENAI_TRANSCRIBE_PRICES', description: 'openai-transcribe models and their price per minute of audio (charged by the second), micro-USD; none: no openai-transcribe node', default: 'whisper-1=6000', parse: priceList },
  falKey: { env: 'FAL_KEY', description: 'fal.ai API key; empty leaves the fal-image node out of the catalog', default: '', parse: verbatim },
  falBaseUrl: { env: 'FAL_BASE_URL', description: 'Base URL of the fal queue API', default: 'https://queue.fal.run', parse: baseUrl },
  falApps: { env: 'FAL_APPS', description: 'fal apps the fal-image node offers and their worst-case price per image, micro-USD (app=micros,...)', default: 'fal-ai/flux/schnell=3000', parse: priceList },
  replicateApiToken: { env: 'REPLICATE_API_TOKEN', description: 'Replicate API token; empty leaves the replicate-image node out of the catalog', default: '', parse: verbatim },
  replicateBaseUrl: { env: 'REPLICATE_BASE_URL', description: 'Base URL of the Replicate API (without /v1)', default: 'https://api.replicate.com', parse: baseUrl },
  replicateModels: { env: 'REPLICATE_MODELS', description: 'Replicate models (owner/name or owner/name:version) the replicate-image node offers and their worst-case price per output image, micro-USD', default: 'black-forest-labs/flux-schnell=3000', parse: priceList },
  providerLimits: {
    env: 'PROVIDER_LIMITS',
    description: "Hosted providers' limits shared by every worker, per provider or per model of it (`provider: rpm=N tpm=N calls=N; provider/model: ...`: requests and tokens per minute, calls at once); each key here replaces a catalog file's limits for it (docs/providers.md). Empty: only the catalog files' limits",
    default: '',
    parse: parseProviderLimits,
  },
  providerLimitLeaseSeconds: { env: 'PROVIDER_LIMIT_LEASE_SECONDS', description: "How long a worker's hold on a provider's concurrent-call slot lasts without renewal (renewed every third of it): a killed worker's slots come back within this", default: '30', parse: int(3, 3600) },
  providerPollMs: { env: 'PROVIDER_POLL_MS', description: 'Pause between status polls of queued provider jobs (fal, Replicate)', default: '1000', parse: int(10, 60_000) },
  providerWebhookBaseUrl: {
    env: 'PROVIDER_WEBHOOK_BASE_URL',
    description:
      "Base URL at which fal and Replicate reach this service's API to say a job ended (usually PUBLIC_BASE_URL, when providers can reach it); a parked job's step then polls at once. Empty: no webhooks, jobs are polled every PROVIDER_POLL_MS",
    default: '',
    parse: (raw: string) => (raw === '' ? '' : baseUrl(raw)),
  },
  providerWebhookPollSeconds: {
    env: 'PROVIDER_WEBHOOK_POLL_SECONDS',
    description: 'Pause between status polls of a provider job that was given a webhook: the fallback should its call never come',
    default: '30',
    parse: int(1, 3600),
  },
  nodeCatalogFiles: {
    env: 'NODE_CATALOG_FILES',
    description: 'Catalog files of hosted models offered as nodes (comma list of YAML files, relative to the working directory; docs/providers.md); "none" for none. A bad entry stops the process at start',
    default: 'catalog/hosted-models.yaml',
    parse: (raw: string): string[] => (raw.trim() === 'none' ? [] : raw.split(',').map((file) => file.trim()).filter((file) => file !== '')),
  },
  openaiModels: { env: 'OPENAI_MODELS', description: 'Chat models the openai-chat node offers (comma list, the first the default); each needs a price in OPENAI_PRICES', default: 'gpt-4o-mini,gpt-4o', parse: nonEmptyNameList },
  openaiPrices: { env: 'OPENAI_PRICES', description: 'Token prices of the chat models, USD per million input/output tokens (model=in/out,...)', default: 'gpt-4o-mini=0.15/0.60,gpt-4o=2.50/10.00', parse: tokenPriceTable },
  anthropicApiKey: { env: 'ANTHROPIC_API_KEY', description: 'Anthropic API key; empty leaves the anthropic-messages node out of the catalog', default: '', parse: verbatim },
  anthropicBaseUrl: { env: 'ANTHROPIC_BASE_URL', description: 'Base URL of the Anthropic API (without /v1)', default: 'https://api.anthropic.com', parse: baseUrl },
  anthropicModels: { env: 'ANTHROPIC_MODELS', description: 'Claude models the anthropic-messages node offers (comma list, the first the default); each needs a price in ANTHROPIC_PRICES', default: 'claude-3-5-haiku-latest,claude-sonnet-4-0', parse: nonEmptyNameList },
  anthropicPrices: { env: 'ANTHROPIC_PRICES', description: 'Token prices of the Claude models, USD per million input/output tokens (model=in/out,...)', default: 'claude-3-5-haiku-latest=0.80/4.00,claude-sonnet-4-0=3.00/15.00', parse: tokenPriceTable },
  localModelCpuSecondMicros: { env: 'LOCAL_MODEL_CPU_SECOND_MICROS', description: 'Price of one CPU second of a local model node (audio-detect-speech, ocr-paddle, image-upscale, image-classify-nsfw), micro-USD; a step costs its measured CPU time at this price', default: '20', parse: int(0, 1_000_000) },
  localModelThreads: { env: 'LOCAL_MODEL_THREADS', description: 'Worker threads each process runs local models on (jobs beyond them wait); each loads the models it runs, about 100 MB', default: '1', parse: int(1, 64) },
  fetchAllowPrivate: {
    path: 'fetch.allowPrivate',
    env: 'FETCH_ALLOW_PRIVATE',
    description: 'Comma-separated CIDR ranges, addresses or host names (optionally :port) that input URLs may reach despite the public-addresses-only rule; development only',
    default: '',
    parse: (raw: string): string[] => {
      const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
      try {
        new AddressAllowList(entries);
      } catch (err) {
        throw new SettingError((err as Error).message);
      }
      return entries;
    },
  },
  fetchMaxBytes: { path: 'fetch.maxBytes', env: 'FETCH_MAX_BYTES', description: 'Largest file fetched from an input URL, bytes', default: String(64 * 1024 * 1024), parse: int(1, 1024 * 1024 * 1024) },
  fetchTimeoutMs: { path: 'fetch.timeoutMs', env: 'FETCH_TIMEOUT_MS', description: 'Time limit of fetching one input URL, redirects and body included, ms', default: '30000', parse: int(100, 600_000) },
  failpoints: { env: 'SVC_FAILPOINTS', description: 'Fault injection for the fault suite, e.g. step.afterReserve=sleep(5000); empty in production', default: '', parse: verbatim },
} as const satisfies Record<string, Setting<unknown>>;

type Settings = typeof SETTINGS;
type SettingKey = keyof Settings;
type Values = { -readonly [K in SettingKey]: ReturnType<Settings[K]['parse']> };
/** Where a setting's value sits in `Config`: its `path` when it has one, else its own key. */
type PathOf<K extends SettingKey> = Settings[K] extends { path: infer P extends string } ? P : K;
type TopKey<P extends string> = P extends `${infer G}.${string}` ? G : P;
type Group<G extends string> = { -readonly [K in SettingKey as PathOf<K> extends `${G}.${infer F}` ? F : never]: Values[K] };

/** Groups present only when their rule holds, else `null` (S3 settings without the s3 driver). */
const OPTIONAL_GROUPS = {
  s3: (values: Values) => values.blobDriver === 's3',
} as const satisfies Record<string, (values: Values) => boolean>;

type Shape = { -readonly [K in SettingKey as TopKey<PathOf<K>>]: PathOf<K> extends `${infer G}.${string}` ? Group<G> : Values[K] };

/** The validated settings, shaped by `SETTINGS` (grouped ones nested, e.g. `http.headersTimeoutMs`). */
export type Config = { [K in keyof Shape]: K extends keyof typeof OPTIONAL_GROUPS ? Shape[K] | null : Shape[K] };

/** Limits on receiving a request; none applies to sending a response (long event streams). */
export type HttpServerSettings = Config['http'];

/** Thrown by `loadConfig`; its message lists every bad variable, one per line. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function readSettings(keys: readonly SettingKey[], env: Env): { values: Partial<Values>; problems: string[] } {
  const problems: string[] = [];
  const values: Partial<Values> = {};
  for (const key of keys) {
    const setting: Setting<unknown> = SETTINGS[key];
    const given = env[setting.env];
    const fallback = typeof setting.default === 'function' ? setting.default(env) : setting.default;
    const raw = given !== undefined && given !== '' ? given : fallback;
    if (raw === undefined) {
      problems.push(`${setting.env} is required (${setting.description})`);
      continue;
    }
    try {
      (values as Record<string, unknown>)[key] = setting.parse(raw);
    } catch (err) {
      if (!(err instanceof SettingError)) throw err;
      problems.push(`${setting.env} ${err.message}`);
    }
  }
  return { values, problems };
}

/** Rules between settings; each returns the problems it finds (values of bad settings are absent). */
function crossCheck(v: Partial<Values>, env: Env): string[] {
  const problems: string[] = [];
  if (v.blobDriver === 's3') {
    for (const name of ['S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY']) {
      if (!env[name]) problems.push(`${name} is required when BLOB_DRIVER=s3`);
    }
  }
  if (v.httpHeadersTimeoutMs !== undefined && v.httpRequestTimeoutMs !== undefined && v.httpHeadersTimeoutMs > v.httpRequestTimeoutMs) {
    problems.push(`HTTP_HEADERS_TIMEOUT_MS (${v.httpHeadersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${v.httpRequestTimeoutMs}): the headers are part of the request`);
  }
  for (const [models, prices, modelsVar, pricesVar] of [[v.openaiModels, v.openaiPrices, 'OPENAI_MODELS', 'OPENAI_PRICES'], [v.anthropicModels, v.anthropicPrices, 'ANTHROPIC_MODELS', 'ANTHROPIC_PRICES']] as const) {
    const unpriced = (models ?? []).filter((model) => prices && !Object.hasOwn(prices, model));
    if (unpriced.length > 0) problems.push(`${modelsVar} lists ${unpriced.join(', ')}, which ${pricesVar} does not price`);
  }
  return problems;
}

/**
 * Reads and validates only the named settings: for tools that need a few of them (the migrator
 * needs the database, not Redis).
 */
export function loadSettings<K extends SettingKey>(keys: readonly K[], env: Env = process.env): Pick<Values, K> {
  const { values, problems } = readSettings(keys, env);
  if (problems.length > 0) throw new ConfigError(problems);
  return values as Pick<Values, K>;
}

/** Reads and validates every setting; `env` defaults to the process environment. */
export function loadConfig(env: Env = process.env): Config {
  const keys = Object.keys(SETTINGS) as SettingKey[];
  const { values, problems } = readSettings(keys, env);
  problems.push(...crossCheck(values, env));
  if (problems.length > 0) throw new ConfigError(problems);
  const v = values as Values;
  const config: Record<string, unknown> = {};
  for (const key of keys) {
    const setting: Setting<unknown> = SETTINGS[key];
    const [group, field] = setting.path?.split('.') ?? [];
    if (group === undefined || field === undefined) config[key] = v[key];
    else config[group] = { ...(config[group] as Record<string, unknown> | undefined), [field]: v[key] };
  }
  for (const [group, present] of Object.entries(OPTIONAL_GROUPS)) if (!present(v)) config[group] = null;
  // On a Redis Cluster every key of ours and BullMQ's must share one hash slot (multi-key scripts):
  // the prefix becomes a hash tag, so the rest of the code uses it unchanged.
  if (v.redisCluster) config.redisPrefix = `{${v.redisPrefix}}`;
  // Retries within a step count towards its attempts in all, so the cap is never below them.
  config.stepMaxAttempts = Math.max(v.stepMaxAttempts, v.stepRetryAttempts);
  return config as Config;
}

/**
 * The environment that holds the keys catalog entries name by variable (`apiKeyEnv`, e.g.
 * OPENROUTER_API_KEY; docs/providers.md): their names are known only once the catalog files are
 * read, so they are not settings of their own.
 */
export function catalogKeyEnvironment(): Env {
  return process.env;
}
