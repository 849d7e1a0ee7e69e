import type { OpName, OpOutput, RunEvent } from '../contract';

/** What a tool call is told besides its input. */
export interface ToolCallOptions {
  /** Aborted when the MCP client cancels the call: following the run stops; the run itself goes on. */
  signal: AbortSignal;
  /** Every event of a run the call follows (`runs.create`), in order; the server turns them into progress. */
  onEvent?: (event: RunEvent) => void;
}

/**
 * How the MCP tools reach the five operations. The stdio server passes one over the SDK's HTTP
 * client (the API's own validation, auth and errors); the hosted server one over the API's
 * in-process `invoke`. A call resolves with the operation's output (`runs.create`: `{ outputs }`
 * once the run completes) or throws a {@link ToolFailure}.
 */
export interface ToolCaller {
  call<K extends OpName>(name: K, input: unknown, options: ToolCallOptions): Promise<OpOutput<K>>;
}
