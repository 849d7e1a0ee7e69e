import type { OpOutput } from '../../contract';
import { declarationOf, ToolFailure, type ToolCaller, type ToolCallOptions, type ToolOp } from '../../mcp';
import { isCallerError } from '../../platform/app-error';
import type { RunEventStream } from '../../runs';
import type { Invoke, InvokeContext } from '../invoke/invoke';

/** Fields of an AppError's details that help an agent act; `runId` and `runError` are said otherwise. */
const USEFUL_DETAILS = ['balanceUsd', 'retryAfterSeconds', 'issues'] as const;

/**
 * The hosted MCP server's tools over the API's in-process `invoke`: the same scope, limits,
 * validation and handlers as the HTTP routes, with the caller the `/mcp` request authenticated.
 * `runs.create`'s events are followed to the terminal one; `signal` (the client cancelled, or its
 * connection closed) ends following, never the run.
 */
export function invokeToolCaller(invoke: Invoke, call: Omit<InvokeContext, 'signal'>): ToolCaller {
  return {
    async call(name: ToolOp, input: unknown, options: ToolCallOptions): Promise<unknown> {
      try {
        const result = await invoke(name, input, { ...call, signal: options.signal });
        if (declarationOf(name).response !== 'sse') return result;
        // Only runs.create streams among the tools: its result is a run's stream.
        return await followRun(result as RunEventStream, options);
      } catch (err) {
        throw toolFailureOf(err, options.signal);
      }
    },
  };
}

/** `{ outputs }` of the run's `run.completed`; its `run.failed` as a failure carrying the run id. */
async function followRun(events: RunEventStream, options: ToolCallOptions): Promise<OpOutput<'runs.create'>> {
  let runId: string | undefined;
  for await (const { event } of events) {
    options.onEvent?.(event);
    if (event.type === 'run.started') runId = event.runId;
    else if (event.type === 'run.completed') return { outputs: event.outputs };
    else if (event.type === 'run.failed') throw new ToolFailure({ code: event.error.code, message: event.error.message, ...(runId === undefined ? {} : { runId }) });
  }
  // The stream ends early only when the caller went away (or the service is shutting down).
  throw new ToolFailure({ code: 'unavailable', message: `stopped following run ${runId ?? '(not started)'} before its outcome; the run goes on`, ...(runId === undefined ? {} : { runId }) });
}

/** The one translation of the API's errors into the MCP tools' failures. */
function toolFailureOf(err: unknown, signal: AbortSignal): ToolFailure {
  if (err instanceof ToolFailure) return signal.aborted ? new ToolFailure({ code: 'cancelled', message: 'the call was cancelled; the run, if one started, goes on', runId: err.runId }) : err;
  if (!isCallerError(err)) return new ToolFailure({ code: 'internal', message: 'internal error; the failure was logged', cause: err });
  const details = err.details ?? {};
  const runError = details.runError as { code: string; message: string } | undefined;
  const runId = typeof details.runId === 'string' ? details.runId : undefined;
  const useful: Record<string, unknown> = {};
  for (const key of USEFUL_DETAILS) if (details[key] !== undefined) useful[key] = details[key];
  // runs.node's failed run (`run_failed`) is reported by the run's own error code, as runs.create's is.
  return new ToolFailure({ code: runError?.code ?? err.code, message: runError?.message ?? err.message, ...(runId === undefined ? {} : { runId }), details: useful });
}
