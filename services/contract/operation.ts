import type { Static, TSchema } from '@sinclair/typebox';
import type { ErrorCode } from './error-codes';

/** Token scopes. `read` has no cost and no side effects; `run` executes nodes and spends money. */
export type Scope = 'read' | 'run';

/**
 * One operation of the contract, as data. The HTTP routes, SDK methods, MCP tools, CLI commands
 * and the OpenAPI document are each one loop over the registry of these.
 */
export interface Operation<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  /** Dotted operation name, e.g. `runs.create`; also the stdio MCP tool name. */
  name: string;
  summary: string;
  http: {
    method: 'GET' | 'POST';
    /** Path under the API base, Express style (`/v1/nodes/:id`). */
    path: string;
    /** Input fields that travel in the path; the others travel in the query (GET) or body (POST). */
    pathParams: readonly string[];
  };
  /** Tool name on the hosted MCP server (underscores). */
  mcpTool: string;
  scope: Scope;
  /** `optional`: works without a token (the node catalog); `required`: 401 without one. */
  auth: 'optional' | 'required';
  input: I;
  /** The JSON result; for `sse` operations, the result a client assembles from the stream. */
  output: O;
  /** `json`: one JSON body; `sse`: a `text/event-stream` of run events ending with `[DONE]`. */
  response: 'json' | 'sse';
  /** Error codes the operation can answer with, besides the universal ones. */
  errors: readonly ErrorCode[];
  /** Whether calling it spends money (MCP annotations, CLI confirmations). */
  spendsMoney: boolean;
  /** Whether it leaves the world unchanged (MCP readOnlyHint). */
  readOnly: boolean;
}

export type InputOf<Op extends Operation> = Static<Op['input']>;
export type OutputOf<Op extends Operation> = Static<Op['output']>;

/** Keeps the literal types of an operation definition while checking it against `Operation`. */
export function defineOperation<I extends TSchema, O extends TSchema, const N extends string, const R extends 'json' | 'sse'>(
  op: Operation<I, O> & { name: N; response: R },
): Operation<I, O> & { name: N; response: R } {
  return op;
}
