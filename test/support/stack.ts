import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { PostgresServer } from './database';

/** The throwaway servers the integration tests run against (started by global-setup.ts). */
export interface Stack {
  tmpDir: string;
  redisUrl: string;
  postgres: PostgresServer;
  templateDatabase: string;
  s3: { endpoint: string; accessKey: string; secretKey: string; bucket: string; region: string };
}

/** Where global set-up records the stack for the test workers (a file: jest workers are other processes). */
export const STACK_FILE = path.join(__dirname, '../../.test-artifacts/stack.json');

let cached: Stack | undefined;

/** The running stack; fails clearly when global set-up did not run. */
export function stack(): Stack {
  if (!cached) {
    if (!fs.existsSync(STACK_FILE)) throw new Error(`no test stack: ${STACK_FILE} is missing (run the integration tests through jest, which starts it)`);
    cached = JSON.parse(fs.readFileSync(STACK_FILE, 'utf8')) as Stack;
  }
  return cached;
}

/** A name unique to this test run, for Redis key prefixes, queue names and buckets. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}
