import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { eventually } from '../../support/eventually';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * One OS process of the service (`workers/serve.ts` with ROLE=api or ROLE=worker), as production
 * runs it: started, signalled, killed and started again by a scenario. Its log (pino, JSON
 * lines) goes to a file of its own, kept across restarts, for the readiness check and for a
 * look after a failure.
 */
export interface ServiceProcess {
  name: string;
  role: 'api' | 'worker';
  /** The API's own port (APIs only). */
  port: number | undefined;
  /** The API's own URL, past the load balancer (APIs only). */
  url: string | undefined;
  logFile: string;
  readonly pid: number | undefined;
  readonly alive: boolean;
  /** Exit codes and signals of the process's past lives, in order. */
  readonly exits: { code: number | null; signal: NodeJS.Signals | null }[];
  /** Starts it (again), with `overrides` on top of its environment; resolves once it serves (API) or consumes (worker). */
  start(overrides?: Record<string, string>): Promise<void>;
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL; resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful stop, as a rolling restart sends); resolves with its exit code once it is gone. */
  stop(): Promise<number | null>;
  /** Resolves once the current life has ended (at once when not running). */
  exited(): Promise<void>;
}

/** The log line each role writes once it is ready (workers/serve.ts). */
const READY_LINE: Record<ServiceProcess['role'], RegExp> = {
  api: /"msg":"API listening"/,
  worker: /"msg":"step worker started"/,
};

export function serviceProcess(options: { name: string; role: 'api' | 'worker'; port?: number; env: Record<string, string>; logDir: string }): ServiceProcess {
  const { name, role, port } = options;
  const logFile = path.join(options.logDir, `${name}.log`);
  let child: ChildProcess | undefined;
  let exit: Promise<void> = Promise.resolve();
  const exits: ServiceProcess['exits'] = [];

  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const proc: ServiceProcess = {
    name,
    role,
    port,
    url: port === undefined ? undefined : `http://127.0.0.1:${port}`,
    logFile,
    get pid() {
      return running() ? child!.pid : undefined;
    },
    get alive() {
      return running();
    },
    exits,
    async start(overrides = {}) {
      if (running()) throw new Error(`${name} is already running (pid ${child!.pid})`);
      const mark = fs.existsSync(logFile) ? fs.statSync(logFile).size : 0;
      const log = fs.openSync(logFile, 'a');
      const env = { ...options.env, ROLE: role, PORT: String(port ?? 0), METRICS_PORT: '0', ...overrides };
      child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'workers/serve.ts')], { cwd: ROOT, env, stdio: ['ignore', log, log] });
      fs.closeSync(log);
      const current = child;
      exit = new Promise((resolve) =>
        current.once('exit', (code, signal) => {
          exits.push({ code, signal });
          resolve();
        }),
      );
      await eventually(
        () => {
          if (current.exitCode !== null || current.signalCode !== null) throw new Error(`${name} exited while starting (${current.exitCode ?? current.signalCode}); see ${logFile}`);
          const text = fs.readFileSync(logFile, 'utf8').slice(mark);
          return READY_LINE[role].test(text);
        },
        { timeoutMs: 120_000, intervalMs: 100, what: `${name} to be ready (log ${logFile})` },
      );
    },
    signal(signal) {
      if (running()) child!.kill(signal);
    },
    async kill() {
      if (!running()) return;
      child!.kill('SIGKILL');
      await exit;
    },
    async stop() {
      if (!running()) return child?.exitCode ?? null;
      child!.kill('SIGTERM');
      await exit;
      return exits[exits.length - 1]!.code;
    },
    exited: () => exit,
  };
  return proc;
}

/**
 * Starts a killed worker again; on a loaded machine its start can outlast `start`'s wait, so a
 * process that is up is then waited for until it logs that its step worker started.
 */
export async function restartWorker(worker: ServiceProcess): Promise<void> {
  const mark = fs.existsSync(worker.logFile) ? fs.statSync(worker.logFile).size : 0;
  try {
    await worker.start();
  } catch (err) {
    if (!worker.alive) throw err;
    await eventually(() => fs.readFileSync(worker.logFile, 'utf8').slice(mark).includes('"msg":"step worker started"'), { timeoutMs: 120_000, intervalMs: 200, what: `${worker.name} to be ready after a slow start` });
  }
}
