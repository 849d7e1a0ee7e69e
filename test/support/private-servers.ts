import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { prepareTemplateDatabase, type PostgresServer } from './database';
import { eventually } from './eventually';
import { freePorts, serverDir, startDurablePostgres, startPersistentRedis, stopPostgres, stopRedis } from './local-servers';

/**
 * A Redis and a Postgres of one test file's own, on free loopback ports, for tests that stop or
 * restart them: the stack's servers are shared by every test file running in parallel and must
 * never be stopped. Redis keeps its AOF (a restart reloads the data) and Postgres its fsync and
 * synchronous commits (a crash loses no acknowledged run), as under `make run`. Postgres has the migrated template database, so `startTestService({ postgres })` can copy it.
 */
export interface PrivateServers {
  redisUrl: string;
  postgres: PostgresServer;
  /** Stops Redis cleanly (AOF flushed) and starts it again on the same port; resolves once it answers. */
  restartRedis(): Promise<void>;
  /** SIGKILLs Redis (no shutdown: the AOF keeps what it fsynced, at most a second behind); resolves once it is gone. */
  killRedis(): Promise<void>;
  /** Stops Redis cleanly and deletes its data (AOF and snapshot): the next start is empty. */
  wipeRedis(): Promise<void>;
  /** Starts Redis again (reloading its AOF, if any); resolves once it answers. */
  startRedis(): Promise<void>;
  /** Stops Postgres as `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster: no shutdown checkpoint); resolves once it is gone. */
  crashPostgres(): Promise<void>;
  /** Starts Postgres again (crash recovery first after `crashPostgres`). */
  startPostgres(): Promise<void>;
  /** Stops both and removes their directory. */
  close(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function startPrivateServers(): Promise<PrivateServers> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-private-'));
  const [redisPort, pgPort] = (await freePorts(2)) as [number, number];
  const postgres: PostgresServer = { host: '127.0.0.1', port: pgPort, user: 'postgres' };
  await Promise.all([startPersistentRedis(dir, redisPort), startDurablePostgres(dir, pgPort)]);
  await prepareTemplateDatabase(postgres);
  return {
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    postgres,
    async restartRedis() {
      await stopRedis(dir, redisPort);
      await startPersistentRedis(dir, redisPort);
    },
    async killRedis() {
      const pid = Number(fs.readFileSync(path.join(serverDir.redis(dir), 'redis.pid'), 'utf8').trim());
      process.kill(pid, 'SIGKILL');
      await eventually(() => !alive(pid), { timeoutMs: 10_000, intervalMs: 20, what: `Redis (pid ${pid}) to exit` });
    },
    async wipeRedis() {
      await stopRedis(dir, redisPort);
      for (const name of ['appendonlydir', 'dump.rdb']) fs.rmSync(path.join(serverDir.redis(dir), name), { recursive: true, force: true });
    },
    startRedis: () => startPersistentRedis(dir, redisPort),
    async crashPostgres() {
      const pidFile = path.join(serverDir.postgres(dir), 'postmaster.pid');
      const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGQUIT');
      await eventually(() => !alive(pid), { timeoutMs: 10_000, intervalMs: 50, what: `Postgres (pid ${pid}) to exit` });
    },
    startPostgres: () => startDurablePostgres(dir, pgPort),
    async close() {
      await Promise.allSettled([stopRedis(dir, redisPort), stopPostgres(dir, pgPort)]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
