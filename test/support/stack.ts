import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { PostgresServer } from './database';

/** The S3 server of the stack: an endpoint URL for our driver, and its parts for raw clients. */
export interface StackS3 {
  /** `http://127.0.0.1:<port>`, the form `S3BlobStore` and `S3_ENDPOINT` take. */
  endpoint: string;
  host: string;
  port: number;
  useSSL: false;
  accessKey: string;
  secretKey: string;
  /** A bucket global set-up created; tests that need an empty one make their own with `uniqueName`. */
  bucket: string;
  region: string;
}

/** The throwaway servers the integration tests run against (started by global-setup.ts). */
export interface Stack {
  redisUrl: string;
  postgres: PostgresServer;
  s3: StackS3;
  /** The run's temporary directory; removed by global teardown, so tests may put files under it. */
  tmpDir: string;
  /** The migrated database each test file copies (`createTestDatabase`). */
  templateDatabase: string;
}

/**
 * The environment variable naming the run's stack file. Global set-up sets it in jest's main
 * process, whose environment the test workers inherit; a per-run file (not one fixed path) lets
 * two test runs on one machine keep their own servers.
 */
export const STACK_FILE_ENV = 'SVC_TEST_STACK_FILE';

let cached: Stack | undefined;

/** The running stack; fails with a clear message when global set-up did not run. */
export function stack(): Stack {
  if (cached) return cached;
  const file = process.env[STACK_FILE_ENV];
  if (!file) {
    throw new Error(`no test stack: ${STACK_FILE_ENV} is not set; run integration tests through jest (npx jest --selectProjects integration), whose global set-up starts the servers`);
  }
  if (!fs.existsSync(file)) throw new Error(`no test stack: ${file} (from ${STACK_FILE_ENV}) does not exist; the run's global set-up did not finish`);
  cached = JSON.parse(fs.readFileSync(file, 'utf8')) as Stack;
  return cached;
}

let counter = 0;

/**
 * A name no other test (in this run or a concurrent one) uses, for Redis key prefixes, queue
 * names and buckets: lower-case letters, digits and `-`, at most 63 characters, so it is also a
 * valid S3 bucket name.
 */
export function uniqueName(prefix: string): string {
  const clean = prefix.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'test';
  const suffix = `${process.pid.toString(36)}-${(counter++).toString(36)}-${randomBytes(4).toString('hex')}`;
  return `${clean.slice(0, 62 - suffix.length)}-${suffix}`;
}
