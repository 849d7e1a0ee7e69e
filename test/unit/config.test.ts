import { ConfigError, loadConfig, loadSettings } from '../../services/platform/config';

const minimal = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/svc',
  REDIS_URL: 'redis://127.0.0.1:6379',
  BLOB_SIGNING_SECRET: 'x'.repeat(32),
};

describe('configuration', () => {
  it('fills documented defaults around the required settings', () => {
    const config = loadConfig(minimal);
    expect(config).toMatchObject({
      role: 'all',
      host: '127.0.0.1',
      port: 8080,
      publicBaseUrl: 'http://127.0.0.1:8080',
      blobDriver: 'fs',
      blobDir: '.data/blobs',
      s3: null,
      workerConcurrency: 16,
      artifactRetentionDays: 30,
      retentionSweepIntervalSeconds: 3600,
    });
  });

  it('derives the public base URL from PORT and strips a trailing slash when given', () => {
    expect(loadConfig({ ...minimal, PORT: '9999' }).publicBaseUrl).toBe('http://127.0.0.1:9999');
    expect(loadConfig({ ...minimal, PUBLIC_BASE_URL: 'https://svc.example.com/api/' }).publicBaseUrl).toBe('https://svc.example.com/api');
  });

  it('names every missing variable at once', () => {
    try {
      loadConfig({});
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      expect(message).toContain('DATABASE_URL is required');
      expect(message).toContain('REDIS_URL is required');
      expect(message).toContain('BLOB_SIGNING_SECRET is required');
    }
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT must be an integer, got "eighty"'],
    [{ PORT: '70000' }, 'PORT must be between 0 and 65535, got 70000'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL must use postgres: or postgresql:'],
    [{ REDIS_URL: 'not a url' }, 'REDIS_URL must be a URL'],
    [{ ROLE: 'both' }, 'ROLE must be one of all, api, worker, got "both"'],
    [{ BLOB_SIGNING_SECRET: 'short' }, 'BLOB_SIGNING_SECRET must be at least 32 characters long'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY must be true or false'],
    [{ BLOB_DRIVER: 's3' }, 'S3_ENDPOINT is required when BLOB_DRIVER=s3'],
    [{ ARTIFACT_RETENTION_DAYS: '0' }, 'ARTIFACT_RETENTION_DAYS must be between 1 and 3650, got 0'],
    [{ RETENTION_SWEEP_INTERVAL_SECONDS: '5' }, 'RETENTION_SWEEP_INTERVAL_SECONDS must be between 10 and 86400, got 5'],
  ])('rejects %j with a message naming the variable', (override, expected) => {
    expect(() => loadConfig({ ...minimal, ...override })).toThrow(expected);
  });

  it('reads the API limits and slow-client settings; 0 turns a limit off; headers may not outlast the request', () => {
    expect(loadConfig(minimal)).toMatchObject({
      rateLimitTokenPerMinute: 600,
      rateLimitIpPerMinute: 1200,
      maxOpenStreamsPerOrg: 100,
      http: { headersTimeoutMs: 20000, requestTimeoutMs: 60000, keepAliveTimeoutMs: 65000, maxHeaderBytes: 16384 },
    });
    expect(loadConfig({ ...minimal, RATE_LIMIT_TOKEN_PER_MINUTE: '0', MAX_OPEN_STREAMS_PER_ORG: '0' })).toMatchObject({ rateLimitTokenPerMinute: 0, maxOpenStreamsPerOrg: 0 });
    expect(() => loadConfig({ ...minimal, RATE_LIMIT_IP_PER_MINUTE: '-1' })).toThrow('RATE_LIMIT_IP_PER_MINUTE must be between 0 and 10000000, got -1');
    expect(() => loadConfig({ ...minimal, HTTP_HEADERS_TIMEOUT_MS: '90000' })).toThrow('HTTP_HEADERS_TIMEOUT_MS (90000) must not exceed HTTP_REQUEST_TIMEOUT_MS (60000)');
  });

  it('selects the s3 driver when an endpoint is configured', () => {
    const config = loadConfig({ ...minimal, S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' });
    expect(config.blobDriver).toBe('s3');
    expect(config.s3).toEqual({ endpoint: 'http://127.0.0.1:9000', accessKey: 'a', secretKey: 'b', bucket: 'svc-artifacts', region: 'us-east-1' });
  });
});

describe('partial settings for tools', () => {
  it('validates only the named settings', () => {
    expect(loadSettings(['databaseUrl'], { DATABASE_URL: 'postgresql://x@127.0.0.1/db' })).toEqual({ databaseUrl: 'postgresql://x@127.0.0.1/db' });
    expect(() => loadSettings(['databaseUrl'], {})).toThrow('DATABASE_URL is required');
  });
});
