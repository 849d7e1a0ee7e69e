import path from 'node:path';

/**
 * The one place that reads the environment. Every setting is listed here once, with its
 * environment variable, its default and a description; `loadConfig` validates all of them at
 * start-up and fails with a message naming each variable that is missing or malformed.
 */

type Env = Record<string, string | undefined>;

export type Role = 'all' | 'api' | 'worker';
export type BlobDriver = 'fs' | 's3';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  role: Role;
  host: string;
  port: number;
  publicBaseUrl: string;
  databaseUrl: string;
  redisUrl: string;
  dataDir: string;
  blobDriver: BlobDriver;
  blobDir: string;
  blobSigningSecret: string;
  blobUrlTtlSeconds: number;
  s3: { endpoint: string; accessKey: string; secretKey: string; bucket: string; region: string } | null;
  bodyLimitBytes: number;
  workerConcurrency: number;
  logLevel: LogLevel;
  trustProxy: boolean;
  shutdownGraceMs: number;
}

/** A described setting: its variable, its default (absent = required) and how to read it. */
interface Setting<T> {
  env: string;
  description: string;
  default?: string | ((env: Env) => string | undefined);
  parse: (raw: string) => T;
}

class SettingError extends Error {}

const int = (min: number, max: number) => (raw: string): number => {
  if (!/^-?\d+$/.test(raw.trim())) throw new SettingError(`must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new SettingError(`must be between ${min} and ${max}, got ${n}`);
  return n;
};

const oneOf = <T extends string>(...values: T[]) => (raw: string): T => {
  if (!(values as string[]).includes(raw)) throw new SettingError(`must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

const url = (...protocols: string[]) => (raw: string): string => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new SettingError(`must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new SettingError(`must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
};

const text = (raw: string): string => {
  if (raw.trim() === '') throw new SettingError('must not be empty');
  return raw;
};

const secret = (raw: string): string => {
  if (raw.length < 32) throw new SettingError('must be at least 32 characters long');
  return raw;
};

const bool = (raw: string): boolean => {
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new SettingError(`must be true or false, got "${raw}"`);
};

/** Every setting the service reads. The README's configuration table mirrors this list. */
export const SETTINGS = {
  role: { env: 'ROLE', description: 'What this process runs: all (API + step worker), api, or worker', default: 'all', parse: oneOf<Role>('all', 'api', 'worker') },
  host: { env: 'HOST', description: 'Interface the HTTP server binds to', default: '127.0.0.1', parse: text },
  port: { env: 'PORT', description: 'HTTP port of the API (0 picks a free one)', default: '8080', parse: int(0, 65535) },
  publicBaseUrl: {
    env: 'PUBLIC_BASE_URL',
    description: 'Base URL clients use to reach this service (blob URLs and printed links are built from it)',
    default: (env: Env) => `http://127.0.0.1:${env.PORT ?? '8080'}`,
    parse: (raw: string) => url('http:', 'https:')(raw).replace(/\/+$/, ''),
  },
  databaseUrl: { env: 'DATABASE_URL', description: 'Postgres connection URL', parse: url('postgres:', 'postgresql:') },
  redisUrl: { env: 'REDIS_URL', description: 'Redis connection URL (BullMQ queues, event bus, rate limits)', parse: url('redis:', 'rediss:') },
  dataDir: { env: 'DATA_DIR', description: 'Directory for local state (dev token, filesystem blobs)', default: '.data', parse: text },
  blobDriver: {
    env: 'BLOB_DRIVER',
    description: 'Blob storage driver: fs (local directory) or s3 (any S3-compatible server)',
    default: (env: Env) => (env.S3_ENDPOINT ? 's3' : 'fs'),
    parse: oneOf<BlobDriver>('fs', 's3'),
  },
  blobDir: { env: 'BLOB_DIR', description: 'Directory of the fs blob driver', default: (env: Env) => path.join(env.DATA_DIR ?? '.data', 'blobs'), parse: text },
  blobSigningSecret: { env: 'BLOB_SIGNING_SECRET', description: 'HMAC secret for signed blob URLs (32+ characters, the same on every replica)', parse: secret },
  blobUrlTtlSeconds: { env: 'BLOB_URL_TTL_SECONDS', description: 'Lifetime of a signed blob URL', default: '86400', parse: int(60, 30 * 86400) },
  s3Endpoint: { env: 'S3_ENDPOINT', description: 'S3 endpoint URL, e.g. http://127.0.0.1:9000 (required when BLOB_DRIVER=s3)', default: '', parse: (raw: string) => (raw === '' ? '' : url('http:', 'https:')(raw)) },
  s3AccessKey: { env: 'S3_ACCESS_KEY', description: 'S3 access key', default: '', parse: (raw: string) => raw },
  s3SecretKey: { env: 'S3_SECRET_KEY', description: 'S3 secret key', default: '', parse: (raw: string) => raw },
  s3Bucket: { env: 'S3_BUCKET', description: 'S3 bucket for run artifacts', default: 'svc-artifacts', parse: text },
  s3Region: { env: 'S3_REGION', description: 'S3 region', default: 'us-east-1', parse: text },
  bodyLimitBytes: { env: 'BODY_LIMIT_BYTES', description: 'Largest accepted JSON request body (larger is 413)', default: String(2 * 1024 * 1024), parse: int(1024, 64 * 1024 * 1024) },
  workerConcurrency: { env: 'WORKER_CONCURRENCY', description: 'Step jobs one worker process runs at once', default: '16', parse: int(1, 1000) },
  logLevel: { env: 'LOG_LEVEL', description: 'pino log level', default: 'info', parse: oneOf<LogLevel>('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent') },
  trustProxy: { env: 'TRUST_PROXY', description: 'Trust X-Forwarded-* headers (behind a load balancer)', default: 'false', parse: bool },
  shutdownGraceMs: { env: 'SHUTDOWN_GRACE_MS', description: 'How long a stopping process waits for in-flight work', default: '10000', parse: int(0, 600000) },
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof SETTINGS;
type Values = { [K in keyof Settings]: ReturnType<Settings[K]['parse']> };

/** Thrown by `loadConfig`; its message lists every bad variable, one per line. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function readSettings(keys: readonly (keyof Settings)[], env: Env): { values: Partial<Values>; problems: string[] } {
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

/**
 * Reads and validates only the named settings: for tools that need a few of them (the migrator
 * needs the database, not Redis).
 */
export function loadSettings<K extends keyof Settings>(keys: readonly K[], env: Env = process.env): Pick<Values, K> {
  const { values, problems } = readSettings(keys, env);
  if (problems.length > 0) throw new ConfigError(problems);
  return values as Pick<Values, K>;
}

/** Reads and validates every setting; `env` defaults to the process environment. */
export function loadConfig(env: Env = process.env): Config {
  const { values, problems } = readSettings(Object.keys(SETTINGS) as (keyof Settings)[], env);
  const v = values as Values;
  if (v.blobDriver === 's3') {
    for (const name of ['S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY']) {
      if (!env[name]) problems.push(`${name} is required when BLOB_DRIVER=s3`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    role: v.role,
    host: v.host,
    port: v.port,
    publicBaseUrl: v.publicBaseUrl,
    databaseUrl: v.databaseUrl,
    redisUrl: v.redisUrl,
    dataDir: v.dataDir,
    blobDriver: v.blobDriver,
    blobDir: v.blobDir,
    blobSigningSecret: v.blobSigningSecret,
    blobUrlTtlSeconds: v.blobUrlTtlSeconds,
    s3: v.blobDriver === 's3'
      ? { endpoint: v.s3Endpoint, accessKey: v.s3AccessKey, secretKey: v.s3SecretKey, bucket: v.s3Bucket, region: v.s3Region }
      : null,
    bodyLimitBytes: v.bodyLimitBytes,
    workerConcurrency: v.workerConcurrency,
    logLevel: v.logLevel,
    trustProxy: v.trustProxy,
    shutdownGraceMs: v.shutdownGraceMs,
  };
}
