import { RunFailedError, ServiceError, startRun, type Client, type RunInput } from '../sdk/src/index';
import { isOpName } from '../contract';
import type { ToolCaller, ToolCallOptions } from './tool-caller';
import type { ToolOp } from './tool-names';
import { ToolFailure } from './tool-failure';

/** Fields of an SDK error body that help an agent act (the rest is the message and code already said). */
const USEFUL_DETAILS = ['balanceUsd', 'retryAfterSeconds', 'issues'] as const;

/**
 * The tools over the SDK's HTTP client (the local stdio server): validation, auth and errors are
 * the API's own. `runs.create` follows the run with `startRun`, so its events become progress.
 */
export class SdkToolCaller implements ToolCaller {
  constructor(private readonly client: Client) {}

  async call(name: ToolOp, input: unknown, options: ToolCallOptions): Promise<unknown> {
    try {
      if (name !== 'runs.create') {
        const calls = (isOpName(name) ? this.client.ops : this.client.routes) as unknown as Record<string, (input: unknown, options: { signal: AbortSignal }) => Promise<unknown>>;
        return await calls[name]!(input, { signal: options.signal });
      }
      const handle = startRun(this.client, input as RunInput, { signal: options.signal });
      for await (const event of handle.events()) options.onEvent?.(event);
      return { outputs: await handle.result() };
    } catch (err) {
      throw toolFailureOf(err, options.signal);
    }
  }
}

/** The SDK's error classes as the tools report them: the service's code, message and run id. */
function toolFailureOf(err: unknown, signal: AbortSignal): ToolFailure {
  if (signal.aborted) return new ToolFailure({ code: 'cancelled', message: 'the call was cancelled; the run, if one started, goes on', cause: err });
  if (err instanceof RunFailedError) return new ToolFailure({ code: err.code, message: err.message, runId: err.runId, cause: err });
  if (err instanceof ServiceError) {
    const details: Record<string, unknown> = {};
    for (const key of USEFUL_DETAILS) {
      const value = key === 'retryAfterSeconds' ? (err as { retryAfterSeconds?: unknown }).retryAfterSeconds : key === 'issues' ? (err as { issues?: unknown }).issues : err.body?.[key];
      if (value !== undefined && !(Array.isArray(value) && value.length === 0)) details[key] = value;
    }
    return new ToolFailure({ code: err.code, message: err.message, details, cause: err });
  }
  return new ToolFailure({ code: 'internal', message: 'the tool failed unexpectedly; the failure was logged on stderr', cause: err });
}
