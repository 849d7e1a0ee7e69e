import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { prepareTemplateDatabase } from './database';
import { STACK_FILE, type Stack } from './stack';

const run = promisify(execFile);
const LOCAL = path.join(__dirname, '../../deploy/local');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function script(name: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  try {
    await run('bash', [path.join(LOCAL, name), ...args], { env: { ...process.env, ...env }, timeout: 180_000 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${name} ${args[0]} failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** Stops what a previous, killed run left behind (its stack file names it). */
async function stopStale(): Promise<void> {
  if (!fs.existsSync(STACK_FILE)) return;
  try {
    const old = JSON.parse(fs.readFileSync(STACK_FILE, 'utf8')) as Stack;
    await stopStack(old);
  } catch {
    // nothing usable to clean
  }
  fs.rmSync(STACK_FILE, { force: true });
}

export async function stopStack(s: Stack): Promise<void> {
  const redisPort = new URL(s.redisUrl).port;
  const s3Port = new URL(s.s3.endpoint).port;
  await Promise.allSettled([
    script('redis.sh', ['stop', path.join(s.tmpDir, 'redis'), redisPort]),
    script('postgres.sh', ['stop', path.join(s.tmpDir, 'postgres'), String(s.postgres.port)]),
    script('s3.sh', ['stop', path.join(s.tmpDir, 's3'), s3Port]),
  ]);
  fs.rmSync(s.tmpDir, { recursive: true, force: true });
}

/**
 * Starts real Redis, Postgres and S3 (Ceph RGW) servers on free loopback ports in a temporary
 * directory, migrates a template database, and records the stack for the test files.
 */
export default async function globalSetup(): Promise<void> {
  await stopStale();
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'));
  fs.chmodSync(tmpDir, 0o755);
  const [redisPort, pgPort, s3Port] = [await freePort(), await freePort(), await freePort()];
  const stackInfo: Stack = {
    tmpDir,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    postgres: { host: '127.0.0.1', port: pgPort, user: 'postgres' },
    templateDatabase: '',
    s3: { endpoint: `http://127.0.0.1:${s3Port}`, accessKey: 'svc-test-access', secretKey: 'svc-test-secret-key-0123456789', bucket: 'svc-test', region: 'us-east-1' },
  };
  fs.mkdirSync(path.dirname(STACK_FILE), { recursive: true });
  fs.writeFileSync(STACK_FILE, JSON.stringify(stackInfo, null, 2));
  try {
    await Promise.all([
      script('redis.sh', ['start', path.join(tmpDir, 'redis'), String(redisPort)], { REDIS_PERSIST: 'no' }),
      script('postgres.sh', ['start', path.join(tmpDir, 'postgres'), String(pgPort)], { PG_FAST: 'yes' }),
      script('s3.sh', ['start', path.join(tmpDir, 's3'), String(s3Port), stackInfo.s3.accessKey, stackInfo.s3.secretKey]),
    ]);
    stackInfo.templateDatabase = await prepareTemplateDatabase(stackInfo.postgres);
    fs.writeFileSync(STACK_FILE, JSON.stringify(stackInfo, null, 2));
  } catch (err) {
    await stopStack(stackInfo);
    fs.rmSync(STACK_FILE, { force: true });
    throw err;
  }
}
