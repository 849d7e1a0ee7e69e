import type { RunEvent } from '../contract';
import type { ToolOp } from './tool-names';

/** What a tool call is told besides its input. */
export interface ToolCallOptions {
  /** Aborted when the MCP client cancels the call: following the run stops; the run itself goes on. */
  signal: AbortSignal;
  /** Every event of a run the call follows (`runs.create`), in order; the server turns them into progress. */
  onEvent?: (event: RunEvent) => void;
}

/**
 * How the MCP tools reach the five operations and the routes served as tools. The stdio server
 * passes one over the SDK's HTTP client (the API's own validation, auth and errors); the hosted
 * server one over the API's in-process `invoke`. A call resolves with the declaration's output
 * (`runs.create`: `{ outputs }` once the run completes) or throws a {@link ToolFailure}.
 */
export interface ToolCaller {
  call(name: ToolOp, input: unknown, options: ToolCallOptions): Promise<unknown>;
}
