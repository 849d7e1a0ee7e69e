import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { freePorts } from '../support/local-servers';
import { stack, uniqueName } from '../support/stack';
import { exited } from '../support/worker-process';

const ROOT = path.resolve(__dirname, '../..');
const execFileAsync = promisify(execFile);
// make run migrates and bootstraps before it serves: generous, on a busy 2-core machine.
const START_MS = 180_000;
// The service's grace (SHUTDOWN_GRACE_MS, 10 s) and its hard stop 5 s after, then the servers.
const STOP_MS = 30_000;

/** Settings of our own, never the test stack's (DATABASE_URL in the environment would win in run-dev.sh). */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'BLOB_SIGNING_SECRET', 'PUBLIC_BASE_URL', 'S3_ENDPOINT', 'BLOB_DRIVER', 'BLOB_DIR', 'MAKEFLAGS', 'MFLAGS']) delete env[name];
  return { ...env, LOG_LEVEL: 'info', ...extra };
}

interface MakeRun {
  make: ChildProcess;
  port: number;
  dataDir: string;
  output(): string;
}

async function startMakeRun(): Promise<MakeRun> {
  const [port, redisPort, pgPort] = await freePorts(3);
  const dataDir = path.join(stack().tmpDir, uniqueName('make-run'));
  const make = spawn('make', ['run'], {
    cwd: ROOT,
    env: cleanEnv({ PORT: String(port), REDIS_PORT: String(redisPort), PG_PORT: String(pgPort), DATA_DIR: dataDir }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  make.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  make.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return { make, port, dataDir, output: () => out };
}

/** The HTTP status /healthz answers on the port, or null when nothing answers. */
async function healthz(port: number): Promise<number | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
    return res.status;
  } catch {
    return null;
  }
}

/** Like lib.sh's `running`: the process exists and is not a zombie. */
function running(pid: number): boolean {
  try {
    const state = /^State:\s*([A-Z])/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return state !== undefined && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The first number in a pid file. */
function pidIn(file: string): number {
  return Number(/\d+/.exec(fs.readFileSync(file, 'utf8'))?.[0]);
}

/** Processes whose parent is `parent` and whose command line mentions `what`. */
function childrenOf(parent: number, what: string): number[] {
  return fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name)).flatMap((name) => {
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8');
      return ppid === parent && cmdline.includes(what) ? [Number(name)] : [];
    } catch {
      return [];
    }
  });
}

describe('make run stops cleanly', () => {
  const started: MakeRun[] = [];

  afterAll(async () => {
    // A failed test must not leave servers behind.
    for (const run of started) {
      if (run.make.exitCode === null && run.make.signalCode === null) run.make.kill('SIGTERM');
      await exited(run.make);
    }
  }, STOP_MS);

  /** The admin command both ways the README gives, against make run's database. */
  async function orgListThroughEnvFile(dataDir: string): Promise<void> {
    const env = cleanEnv({ DATA_DIR: dataDir });
    const envFile = path.join(dataDir, 'env');
    expect(fs.statSync(envFile).mode & 0o777).toBe(0o600);
    const viaMake = await execFileAsync('make', ['-s', 'admin', 'ARGS=org list --json'], { cwd: ROOT, env });
    expect(JSON.parse(viaMake.stdout)).toEqual({ organizations: [expect.objectContaining({ slug: 'dev', balanceUsd: 10 })] });
    const sourced = await execFileAsync('bash', ['-c', `set -a; . "${envFile}"; set +a; npm run -s admin -- org list`], { cwd: ROOT, env });
    expect(sourced.stdout).toMatch(/^dev\tDev Org\t10\.00 USD\t[0-9a-f-]{36}\n$/);
  }

  it.each(['SIGTERM', 'SIGINT'] as const)('stops the service, then Redis and Postgres, when make alone gets %s', async (signal) => {
    const run = await startMakeRun();
    started.push(run);
    await eventually(() => healthz(run.port).then((status) => status === 200), { timeoutMs: START_MS, intervalMs: 250, what: `/healthz of make run on ${run.port}` });
    const scriptPid = pidIn(path.join(run.dataDir, 'make-run.pid'));
    const [servicePid] = childrenOf(scriptPid, 'workers/serve.ts');
    const pids = { service: servicePid, redis: pidIn(path.join(run.dataDir, 'redis/redis.pid')), postgres: pidIn(path.join(run.dataDir, 'postgres/postmaster.pid')) };
    expect(pids).toEqual({ service: expect.any(Number), redis: expect.any(Number), postgres: expect.any(Number) });
    if (signal === 'SIGTERM') await orgListThroughEnvFile(run.dataDir);

    run.make.kill(signal);
    await eventually(() => !running(pids.service) && !running(pids.redis) && !running(pids.postgres), { timeoutMs: STOP_MS, intervalMs: 100, what: 'the service, Redis and Postgres to exit' });
    await eventually(() => run.make.exitCode !== null || run.make.signalCode !== null, { timeoutMs: STOP_MS, intervalMs: 100, what: 'make to exit' });
    expect(await healthz(run.port)).toBeNull();
    // The service went first: it logged its stop before the servers were stopped under it.
    const out = run.output();
    expect(out.indexOf('"msg":"stopped"')).toBeGreaterThan(-1);
    expect(out.indexOf('"msg":"stopped"')).toBeLessThan(out.indexOf('stopping Redis and Postgres'));
    expect(out).not.toContain('ECONNREFUSED');
  }, START_MS + 2 * STOP_MS);

  it('refuses a taken PORT in one line before starting anything', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const [redisPort, pgPort] = await freePorts(2);
      const dataDir = path.join(stack().tmpDir, uniqueName('make-run-taken'));
      const make = spawn('make', ['run'], {
        cwd: ROOT,
        env: cleanEnv({ PORT: String(port), REDIS_PORT: String(redisPort), PG_PORT: String(pgPort), DATA_DIR: dataDir }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      make.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      make.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await exited(make);
      expect(make.exitCode).not.toBe(0);
      expect(stderr).toContain(`error: port ${port} is already in use on 127.0.0.1 (another program listens there); choose another with: make run PORT=<port>\n`);
      expect(stderr).not.toMatch(/EADDRINUSE|\n\s+at /);
      expect(stdout).not.toContain('SERVICE_URL');
      // Nothing was started: no pid files, and both ports still free.
      expect(fs.existsSync(path.join(dataDir, 'redis/redis.pid'))).toBe(false);
      expect(fs.existsSync(path.join(dataDir, 'postgres/postmaster.pid'))).toBe(false);
      for (const p of [redisPort, pgPort]) {
        await new Promise<void>((resolve, reject) => {
          const probe = net.createServer().once('error', reject);
          probe.listen(p, '127.0.0.1', () => probe.close(() => resolve()));
        });
      }
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, START_MS);

  describe('the service on a taken port', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase(stack().postgres);
    });
    afterAll(async () => {
      await db.drop();
    });

    it('says so in one line and exits 1', async () => {
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const port = (taken.address() as net.AddressInfo).port;
      try {
        const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'workers/serve.ts')], {
          cwd: ROOT,
          env: cleanEnv({
            DATABASE_URL: db.url,
            REDIS_URL: stack().redisUrl,
            REDIS_PREFIX: uniqueName('taken').slice(0, 40),
            BLOB_SIGNING_SECRET: 'test-signing-secret-0123456789abcdef',
            BLOB_DRIVER: 'fs',
            BLOB_DIR: path.join(stack().tmpDir, uniqueName('blobs')),
            PORT: String(port),
            LOG_LEVEL: 'silent',
          }),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        await exited(child);
        expect(child.exitCode).toBe(1);
        expect(stderr).toBe(`error: port ${port} on 127.0.0.1 is already in use by another program; choose another with PORT=<port> (make run PORT=<port>)\n`);
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    }, 60_000);
  });
});
