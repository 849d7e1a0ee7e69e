import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI_BIN } from './cli-build';

/** What one `svc` invocation did. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * A person's machine for the CLI: a home directory of its own (the config file goes under
 * it), and the environment `svc` sees. Nothing of the test runner's environment leaks in but
 * PATH, so a developer's own SERVICE_TOKEN or config never changes a test.
 */
export class CliHome {
  readonly dir: string;
  readonly env: Record<string, string>;

  constructor(env: Record<string, string> = {}) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-home-'));
    this.env = { PATH: process.env.PATH ?? '', HOME: this.dir, ...env };
  }

  /** `$XDG_CONFIG_HOME/svc/config.json` when set, else under HOME. */
  get configFile(): string {
    return path.join(this.env.XDG_CONFIG_HOME || path.join(this.dir, '.config'), 'svc', 'config.json');
  }

  /** Starts `node svc.cjs <args>` (for tests that read its output as it comes or interrupt it). */
  spawn(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}): ChildProcessWithoutNullStreams {
    const child = spawn(process.execPath, [CLI_BIN, ...args], { env: { ...this.env, ...options.env }, cwd: options.cwd ?? this.dir });
    streamOf(child, 'stderr');
    return child;
  }

  /** Runs `svc <args>` to its end. */
  run(args: readonly string[], options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
    return finished(this.spawn(args, options), options.timeoutMs ?? 60_000);
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Collects a child's output until it exits; killed (and the test told so) past the timeout. */
export function finished(child: ChildProcessWithoutNullStreams, timeoutMs = 60_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Resolves with the child's stderr so far once it matches `pattern`. */
export function stderrMatching(child: ChildProcessWithoutNullStreams, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return streamMatching(child, 'stderr', pattern, timeoutMs);
}

/** Resolves with the child's stdout so far once it matches `pattern` (under `script`, stderr arrives there too). */
export function stdoutMatching(child: ChildProcessWithoutNullStreams, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return streamMatching(child, 'stdout', pattern, timeoutMs);
}

function streamMatching(child: ChildProcessWithoutNullStreams, which: 'stdout' | 'stderr', pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  const seen = streamOf(child, which);
  const stream = child[which];
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const match = seen.text.match(pattern);
      if (!match) return false;
      clearTimeout(timer);
      stream.off('data', onData);
      resolve(match);
      return true;
    };
    // Everything said so far counts: two lines can arrive in one chunk, before this was asked.
    const onData = () => void check();
    const timer = setTimeout(() => {
      stream.off('data', onData);
      reject(new Error(`${which} never matched ${pattern} within ${timeoutMs} ms: ${seen.text}`));
    }, timeoutMs);
    if (!check()) stream.on('data', onData);
  });
}

const soFar = { stdout: new WeakMap<ChildProcessWithoutNullStreams, { text: string }>(), stderr: new WeakMap<ChildProcessWithoutNullStreams, { text: string }>() };

/** All a child has written on one stream, collected from the first time it is asked for. */
function streamOf(child: ChildProcessWithoutNullStreams, which: 'stdout' | 'stderr'): { text: string } {
  let seen = soFar[which].get(child);
  if (!seen) {
    const collected = { text: '' };
    child[which].on('data', (chunk: Buffer) => (collected.text += chunk.toString()));
    soFar[which].set(child, collected);
    seen = collected;
  }
  return seen;
}

/**
 * util-linux `script`, which gives a command a pseudo-terminal: thrown at when missing (Debian
 * and the CI image have it), so a test of the terminal display fails loudly rather than skip.
 */
export function requireScript(): void {
  try {
    execFileSync('sh', ['-c', 'command -v script'], { stdio: 'pipe' });
  } catch {
    throw new Error('util-linux `script` is not installed (apt-get install bsdutils): the terminal display of svc run is tested under it');
  }
}

/** A word for `sh -c`, quoted whatever it holds. */
const shellWord = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `svc <args>` with a terminal for its stdout and stderr (`script -qec "<command>" /dev/null`),
 * as a person's shell would. The two streams come back merged in `stdout`, with the terminal's
 * `\r\n` line ends, as the person sees them.
 */
export function runInTerminal(home: CliHome, args: readonly string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  return finished(spawnInTerminal(home, args, options), options.timeoutMs);
}

/**
 * `svc <args>` started with a terminal, as {@link runInTerminal}; what the test writes to the
 * child's stdin is typed at that terminal (`\x03` is Ctrl-C: the terminal sends SIGINT).
 */
export function spawnInTerminal(home: CliHome, args: readonly string[], options: { env?: Record<string, string> } = {}): ChildProcessWithoutNullStreams {
  const command = [process.execPath, CLI_BIN, ...args].map(shellWord).join(' ');
  // stdin stays an open pipe: at its end `script` would end the session early.
  return spawn('script', ['-qec', command, '/dev/null'], { env: { ...home.env, ...options.env }, cwd: home.dir });
}
