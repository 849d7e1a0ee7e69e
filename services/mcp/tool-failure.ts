/**
 * A refused or failed operation as the MCP tools report it: the service's error code (or the
 * run's, from `run.failed`), its message, the run id when a run was started, and the fields
 * particular to a code (`balanceUsd`, `retryAfterSeconds`, validation `issues`).
 */
export class ToolFailure extends Error {
  readonly code: string;
  readonly runId: string | undefined;
  readonly details: Record<string, unknown>;

  constructor(init: { code: string; message: string; runId?: string; details?: Record<string, unknown>; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ToolFailure';
    this.code = init.code;
    this.runId = init.runId;
    this.details = init.details ?? {};
  }
}
