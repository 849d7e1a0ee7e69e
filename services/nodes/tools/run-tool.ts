import { spawn } from 'node:child_process';

/** Why a tool run failed: not installed, killed at its time limit, too much output, or a non-zero exit. */
export type ToolFailure = 'missing' | 'timeout' | 'output_too_large' | 'exit';

/** A failed tool run. `stderr` is the tool's last words, already shortened for messages. */
export class ToolError extends Error {
  readonly reason: ToolFailure;
  readonly stderr: string;

  constructor(reason: ToolFailure, message: string, stderr = '') {
    super(message);
    this.name = 'ToolError';
    this.reason = reason;
    this.stderr = stderr;
  }
}

export interface RunToolOptions {
  /** Bytes written to the tool's stdin (closed at once when absent). */
  stdin?: Buffer;
  /** Working directory (the temporary directory holding the tool's input and output files). */
  cwd?: string;
  /** The whole environment of the tool; inherits the service's when absent. */
  env?: NodeJS.ProcessEnv;
  /** Killed after this long (default 120 s). */
  timeoutMs?: number;
  /** Largest stdout accepted; more kills the tool (default 64 MiB). */
  maxOutputBytes?: number;
  /** Aborting kills the tool and rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface ToolResult {
  stdout: Buffer;
  /** The end of stderr, at most `STDERR_KEEP` characters. */
  stderr: string;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;
/** stderr kept for error messages; tools can be chatty and messages must stay short. */
const STDERR_KEEP = 600;

/** The last `STDERR_KEEP` characters of stderr, on one line. */
function shortStderr(chunks: Buffer[]): string {
  const text = Buffer.concat(chunks).toString('utf8').replace(/\s+/g, ' ').trim();
  return text.length > STDERR_KEEP ? `…${text.slice(-STDERR_KEEP)}` : text;
}

/**
 * Runs a program with an argument array (never through a shell), in its own process group so
 * that killing it also kills anything it started. Resolves with stdout when it exits with 0;
 * rejects with a `ToolError` when it is missing, exceeds its time limit or output cap, or fails,
 * and with `signal.reason` when the signal aborts (the process group is SIGKILLed first).
 */
export function runTool(binary: string, args: readonly string[], options: RunToolOptions = {}): Promise<ToolResult> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  return new Promise<ToolResult>((resolve, reject) => {
    const child = spawn(binary, [...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      shell: false,
      windowsHide: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrBytes = 0;
    let failure: Error | undefined;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const fail = (err: Error): void => {
      failure ??= err;
      killGroup();
    };
    const onAbort = (): void => fail(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => fail(new ToolError('timeout', `${binary} took longer than ${Math.round(timeoutMs / 1000)} s and was stopped`)), timeoutMs);

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxOutput) fail(new ToolError('output_too_large', `${binary} produced more than ${maxOutput} bytes and was stopped`));
      else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      // Only the tail matters; keep a bounded amount.
      stderrBytes += chunk.length;
      stderr.push(chunk);
      while (stderrBytes > 8 * STDERR_KEEP && stderr.length > 1) stderrBytes -= stderr.shift()!.length;
    });
    // A tool that exits without reading its stdin makes the write fail with EPIPE: not our error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin);

    const finish = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    child.on('error', (err: NodeJS.ErrnoException) => {
      finish();
      if (err.code === 'ENOENT') reject(new ToolError('missing', `${binary} is not installed`));
      else reject(failure ?? new ToolError('exit', `${binary} could not be started: ${err.message}`));
    });
    child.on('close', (code, killedBy) => {
      finish();
      if (failure) return reject(failure);
      const tail = shortStderr(stderr);
      if (code !== 0) {
        const how = killedBy ? `was killed by ${killedBy}` : `exited with ${code}`;
        return reject(new ToolError('exit', `${binary} ${how}${tail ? `: ${tail}` : ''}`, tail));
      }
      resolve({ stdout: Buffer.concat(stdout), stderr: tail });
    });
  });
}
