import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Stack } from './stack';

/**
 * Starting and stopping the stack's servers through the same deploy/local scripts `make run`
 * uses, each with its state in a subdirectory of the run's temporary directory.
 */

const execFileAsync = promisify(execFile);
const SCRIPTS = path.resolve(__dirname, '../../deploy/local');
// Generous: a machine without the packages installs Ceph first (about 90 s).
const SCRIPT_TIMEOUT_MS = 240_000;

/** The subdirectory each server keeps its state in. */
export const serverDir = {
  redis: (tmpDir: string) => path.join(tmpDir, 'redis'),
  postgres: (tmpDir: string) => path.join(tmpDir, 'postgres'),
  s3: (tmpDir: string) => path.join(tmpDir, 's3'),
};

/** `count` distinct TCP ports that are free on 127.0.0.1 at this moment. */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    // Holding every socket open until all are bound is what makes the ports distinct.
    for (let i = 0; i < count; i++) {
      const server = net.createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
    }
    return servers.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** Runs one deploy/local script; a failure carries the script's own error lines. */
async function script(name: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  try {
    await execFileAsync('bash', [path.join(SCRIPTS, name), ...args], { env: { ...process.env, ...env }, timeout: SCRIPT_TIMEOUT_MS });
  } catch (err) {
    const e = err as { stderr?: string; message: string; killed?: boolean };
    const detail = e.killed ? `no result within ${SCRIPT_TIMEOUT_MS / 1000} s` : e.stderr?.trim() || e.message;
    throw new Error(`deploy/local/${name} ${args.join(' ')} failed: ${detail}`);
  }
}

/** Redis without persistence (the data is thrown away) and Postgres without fsync. */
export const startRedis = (tmpDir: string, port: number) => script('redis.sh', ['start', serverDir.redis(tmpDir), String(port)], { REDIS_PERSIST: 'no' });
export const startPostgres = (tmpDir: string, port: number) => script('postgres.sh', ['start', serverDir.postgres(tmpDir), String(port)], { PG_FAST: 'yes' });
/** Ceph's monitor port is passed in too, so it is distinct from the run's other ports. */
export const startS3 = (tmpDir: string, s3: Stack['s3'], monPort: number) =>
  script('s3.sh', ['start', serverDir.s3(tmpDir), String(s3.port), s3.accessKey, s3.secretKey], { S3_MON_PORT: String(monPort) });

/** Stops one server started by the functions above (one that never started is skipped by its script). */
/** A Redis started as a node of a Redis Cluster (its state in DIR), not yet joined to the others. */
export const startRedisClusterNode = (dir: string, port: number) => script('redis.sh', ['start', dir, String(port)], { REDIS_PERSIST: 'no', REDIS_CLUSTER: 'yes' });
export const stopRedisNode = (dir: string, port: number) => script('redis.sh', ['stop', dir, String(port)]);
export const stopRedis = (tmpDir: string, port: number) => script('redis.sh', ['stop', serverDir.redis(tmpDir), String(port)]);
export const stopPostgres = (tmpDir: string, port: number) => script('postgres.sh', ['stop', serverDir.postgres(tmpDir), String(port)]);
export const stopS3 = (tmpDir: string, port: number) => script('s3.sh', ['stop', serverDir.s3(tmpDir), String(port)]);

/** Stops every server of a stack (those that never started are skipped by the scripts); never throws. */
export async function stopServers(s: Pick<Stack, 'tmpDir' | 'redisUrl' | 'postgres' | 's3'>): Promise<string[]> {
  const results = await Promise.allSettled([
    stopRedis(s.tmpDir, Number(new URL(s.redisUrl).port)),
    stopPostgres(s.tmpDir, s.postgres.port),
    stopS3(s.tmpDir, s.s3.port),
  ]);
  return results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : []));
}

/** Redis with its AOF on, as `make run` has it, so that a restart reloads the data (tests of Redis restarts). */
export const startPersistentRedis = (tmpDir: string, port: number) => script('redis.sh', ['start', serverDir.redis(tmpDir), String(port)], { REDIS_PERSIST: 'yes' });
/** Postgres with fsync and synchronous commits on, as `make run` has it, so that a crash loses no acknowledged commit (tests of Postgres crashes). */
export const startDurablePostgres = (tmpDir: string, port: number) => script('postgres.sh', ['start', serverDir.postgres(tmpDir), String(port)], { PG_FAST: 'no' });
