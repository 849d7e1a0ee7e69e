import {
  AuthenticationError,
  ConnectionError,
  InsufficientCreditError,
  InvalidInputError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  RunFailedError,
  ServerError,
  ServiceError,
} from '../../sdk/src/index';
import { CliError, EXIT, RunFailure, type ExitCode } from './cli-error';
import { Interrupted, isInterrupt } from './interrupt';
import { renewalFailure } from './saved-session';

/** What the CLI says about a failure: the message, the stable code, the exit code and, for a run, its id. */
export interface Failure {
  message: string;
  code: string;
  exitCode: ExitCode;
  runId?: string;
  /** What `--json` adds to the error document (a failed run's cost so far). */
  details?: Record<string, unknown>;
}

/** Maps any error to its exit code (the table in docs/cli.md); the SDK's classes decide, never message text. */
export function failureOf(err: unknown): Failure {
  if (isInterrupt(err)) {
    const runId = err instanceof Interrupted ? err.runId : undefined;
    const cancelled = err instanceof Interrupted && err.cancelled;
    return { message: cancelled ? 'interrupted (Ctrl-C); the run was cancelled' : 'interrupted (Ctrl-C)', code: 'interrupted', exitCode: EXIT.interrupted, ...(runId === undefined ? {} : { runId }) };
  }
  if (err instanceof RunFailure) return { message: err.message, code: err.code, exitCode: err.exitCode, runId: err.runId, details: { costUsd: err.costUsd } };
  if (err instanceof CliError) return { message: err.message, code: err.code, exitCode: err.exitCode };
  // The saved login's renewal failed inside the SDK's fetch: its own message and exit code.
  const renewal = renewalFailure(err);
  if (renewal) return failureOf(renewal);
  if (err instanceof RunFailedError) return { message: err.message, code: err.code, exitCode: EXIT.runFailed, runId: err.runId };
  if (err instanceof ServiceError) return { message: messageOf(err), code: err.code, exitCode: exitCodeOf(err) };
  const message = err instanceof Error ? err.message : String(err);
  return { message, code: 'internal', exitCode: EXIT.connection };
}

function exitCodeOf(err: ServiceError): ExitCode {
  if (err instanceof InvalidInputError || err instanceof NotFoundError) return EXIT.usage;
  if (err instanceof AuthenticationError || err instanceof PermissionError) return EXIT.auth;
  if (err instanceof InsufficientCreditError) return EXIT.credit;
  if (err instanceof ConnectionError || err instanceof ServerError || err instanceof RateLimitError) return EXIT.connection;
  return err.status >= 400 && err.status < 500 ? EXIT.usage : EXIT.connection;
}

/** The service's message, with what a person can act on: each validation issue, the balance, when to retry. */
function messageOf(err: ServiceError): string {
  const lines = [err.message];
  if (err instanceof InvalidInputError) {
    for (const issue of err.issues.slice(0, 10)) {
      const line = `  ${issue.path ? `${issue.path}: ` : ''}${issue.message}`;
      if (!err.message.includes(issue.message)) lines.push(line);
    }
  }
  if (err instanceof InsufficientCreditError && err.balanceUsd !== undefined) lines.push(`  balance: $${err.balanceUsd}`);
  if (err instanceof RateLimitError && err.retryAfterSeconds !== undefined) lines.push(`  retry after ${err.retryAfterSeconds} s`);
  if (err instanceof AuthenticationError) lines.push('  sign in again with `svc login`, or set SERVICE_TOKEN');
  return lines.join('\n');
}
