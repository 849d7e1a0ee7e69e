import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'minio';
import { prepareTemplateDatabase } from './database';
import { freePorts, startPostgres, startRedis, startS3, stopServers } from './local-servers';
import { ensureStudioBuilt } from './studio-build';
import { cleanStaleStacks, currentOwner, STACK_DIR_PREFIX, STACK_FILE_NAME, type StackRecord } from './stale-stacks';
import { STACK_FILE_ENV, type StackS3 } from './stack';

/** The bucket every run creates; tests needing an empty bucket make their own. */
const TEST_BUCKET = 'svc-test';

function writeRecord(file: string, record: StackRecord): void {
  // Rename into place, so a reader (a stale-stack sweep of another run) never sees half a file.
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(record, null, 2));
  fs.renameSync(`${file}.tmp`, file);
}

async function createBucket(s3: StackS3): Promise<void> {
  const client = new Client({ endPoint: s3.host, port: s3.port, useSSL: s3.useSSL, accessKey: s3.accessKey, secretKey: s3.secretKey, region: s3.region });
  if (!(await client.bucketExists(s3.bucket))) await client.makeBucket(s3.bucket, s3.region);
}

/** Runs `work`, noting how long it took under `name`. */
async function timed<T>(timings: Record<string, number>, name: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    timings[name] = Date.now() - started;
  }
}

/**
 * Jest global set-up of the integration project: real Redis, Postgres and S3 (Ceph RGW) servers
 * on free loopback ports, with their state in a fresh temporary directory, started in parallel;
 * the S3 test bucket; the migrated template database. The stack file's path goes into
 * `SVC_TEST_STACK_FILE` for the test workers (see stack.ts). If anything fails to start, what did
 * start is stopped and the error names each failure.
 */
export default async function globalSetup(): Promise<void> {
  await cleanStaleStacks();
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), STACK_DIR_PREFIX));
  const [redisPort, pgPort, s3Port, cephMonPort] = await freePorts(4);
  const record: StackRecord = {
    owner: currentOwner(),
    tmpDir,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    postgres: { host: '127.0.0.1', port: pgPort, user: 'postgres' },
    s3: {
      endpoint: `http://127.0.0.1:${s3Port}`,
      host: '127.0.0.1',
      port: s3Port,
      useSSL: false,
      accessKey: `svctest${randomBytes(6).toString('hex')}`,
      secretKey: randomBytes(24).toString('base64url'),
      bucket: TEST_BUCKET,
      region: 'us-east-1',
    },
    templateDatabase: '',
  };
  const file = path.join(tmpDir, STACK_FILE_NAME);
  // Written before any server starts, so a run killed from here on can be cleaned up by the next.
  writeRecord(file, record);

  const timings: Record<string, number> = {};
  const started = Date.now();
  const [redis, postgres, s3, studio] = await Promise.allSettled([
    timed(timings, 'redis', () => startRedis(tmpDir, redisPort)),
    timed(timings, 'postgres', () => startPostgres(tmpDir, pgPort)).then(() =>
      timed(timings, 'template database', () => prepareTemplateDatabase(record.postgres)),
    ),
    timed(timings, 's3', () => startS3(tmpDir, record.s3, cephMonPort)).then(() => timed(timings, 'bucket', () => createBucket(record.s3))),
    // The API serves the built studio; browser tests need it built from this tree.
    timed(timings, 'studio build', () => ensureStudioBuilt()),
  ]);
  const failures = [redis, postgres, s3, studio].flatMap((r) => (r.status === 'rejected' ? [r.reason instanceof Error ? r.reason.message : String(r.reason)] : []));
  if (postgres.status === 'rejected' || failures.length > 0) {
    const stopFailures = await stopServers(record);
    // The directory keeps the servers' logs for a look; the next run's stale sweep removes it.
    record.owner = { pid: 0, startTime: null };
    writeRecord(file, record);
    const also = stopFailures.length ? `\nwhile stopping the others:\n- ${stopFailures.join('\n- ')}` : '';
    throw new Error(`the integration-test stack did not start (logs kept in ${tmpDir} until the next run):\n- ${failures.join('\n- ')}${also}`);
  }
  record.templateDatabase = postgres.value;
  writeRecord(file, record);
  process.env[STACK_FILE_ENV] = file;
  if (process.env.SVC_TEST_TIMINGS) {
    const parts = Object.entries(timings).map(([name, ms]) => `${name} ${ms} ms`);
    console.log(`\ntest stack ready in ${Date.now() - started} ms (${parts.join(', ')}) at ${tmpDir}`);
  }
}
