import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './eventually';
import { freePorts, startRedisClusterNode, stopRedisNode } from './local-servers';

const execFileAsync = promisify(execFile);

export interface RedisCluster {
  ports: number[];
  /** One node's URL: the service discovers the others from it (`REDIS_CLUSTER=true`). */
  url: string;
  /** Runs redis-cli against the node on `port`. */
  cli(port: number, ...args: string[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * A Redis Cluster of `size` masters (no replicas) on loopback, in a temporary directory: Debian's
 * redis-server started in cluster mode (deploy/local/redis.sh), joined by `redis-cli --cluster
 * create`, ready once every node says `cluster_state:ok`.
 */
export async function startRedisCluster(size = 3): Promise<RedisCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-redis-cluster-'));
  const ports = await freePorts(size);
  const cli = async (port: number, ...args: string[]) => (await execFileAsync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 })).stdout;
  const close = async () => {
    await Promise.all(ports.map((port) => stopRedisNode(path.join(dir, String(port)), port).catch(() => undefined)));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((port) => startRedisClusterNode(path.join(dir, String(port)), port)));
    await execFileAsync('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 60_000 });
    for (const port of ports) {
      await eventually(async () => (await cli(port, 'cluster', 'info')).includes('cluster_state:ok'), { timeoutMs: 30_000, intervalMs: 100, what: `the cluster node on ${port} to report cluster_state:ok` });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { ports, url: `redis://127.0.0.1:${ports[0]}`, cli, close };
}
