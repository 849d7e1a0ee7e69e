/**
 * The exit codes of `svc`, one per kind of failure, so scripts can branch without reading
 * messages (docs/cli.md lists them).
 */
export const EXIT = {
  ok: 0,
  /** The run (or the single node) ran and failed: a step failed, the spend cap was reached. */
  runFailed: 1,
  /** The command line or an input is wrong: an unknown input, a value of the wrong type, an unknown node or workflow. */
  usage: 2,
  /** No token, or the token was refused (401, 403), or the device login was denied or expired. */
  auth: 3,
  /** The organization's balance cannot cover the run (402). */
  credit: 4,
  /** The service could not be reached, failed (5xx) or asked to slow down (429). */
  connection: 5,
  /** Ctrl-C: following stopped, the run goes on. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the CLI found itself (before or beside the service), with its code and exit code. */
export class CliError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  constructor(message: string, code: string, exitCode: ExitCode) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.exitCode = exitCode;
  }
}

/** A wrong command line or input value. */
export const usageError = (message: string, code = 'usage'): CliError => new CliError(message, code, EXIT.usage);

/** No credential, or a device login that did not end with one. */
export const authError = (message: string, code = 'unauthorized'): CliError => new CliError(message, code, EXIT.auth);

/** A run that ran and failed, with what `--json` reports of it. */
export class RunFailure extends CliError {
  constructor(readonly runId: string, code: string, message: string, readonly costUsd: number) {
    super(message, code, EXIT.runFailed);
  }
}
