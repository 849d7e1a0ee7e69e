import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { TestService } from './service';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A real worker process (`workers/serve.ts`, ROLE=worker) on a test service's database and Redis:
 * for faults that need a process to die (failpoints such as `step.beforeSettle=exit(137)`). Its
 * log goes to stderr only when TEST_LOG_LEVEL is set.
 */
export function startWorkerProcess(service: TestService, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'workers/serve.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...service.env, ROLE: 'worker', PORT: '0', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => process.env.TEST_LOG_LEVEL && process.stderr.write(chunk));
  return child;
}

/** Resolves when the child has exited (at once if it already has: its 'exit' event is then gone). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}
