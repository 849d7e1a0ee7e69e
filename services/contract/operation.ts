import type { Static, TSchema } from '@sinclair/typebox';
import type { CallOptionName } from './call-options';
import type { ErrorCode } from './error-codes';

/** Token scopes. `read` has no cost and no side effects; `run` executes nodes and spends money. */
export type Scope = 'read' | 'run';

/** Kinds of credential (docs/auth.md): personal access tokens, device-login sessions, the web editor's cookie. */
export type TokenKind = 'personal' | 'session' | 'browser' | 'oauth';

/**
 * One operation of the contract, as data. The HTTP routes, SDK methods, MCP tools, CLI commands
 * and the OpenAPI document are each one loop over the registry of these.
 */
export interface Operation<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  /** Dotted operation name, e.g. `runs.create`; also the stdio MCP tool name. */
  name: string;
  summary: string;
  http: {
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
    /** Path under the API base, Express style (`/v1/nodes/:id`). */
    path: string;
    /** Input fields that travel in the path; the others travel in the query (GET, DELETE) or body (POST, PATCH). */
    pathParams: readonly string[];
    /** Status of a successful answer; default 200 (204: no body). */
    status?: 200 | 201 | 204;
    /**
     * `bytes`: the body is a file, handed to the handler as the call's upload (its Content-Type its
     * media type), not as input. `empty`: a POST whose input is all in its path; it may be sent with
     * no body (or `{}`), as `curl -X POST` does.
     */
    body?: 'json' | 'bytes' | 'empty';
    /** The answer carries a secret or an identity: `Cache-Control: no-store`. */
    noStore?: boolean;
    /** Call options it takes, each as its request header ({@link CALL_OPTIONS}). */
    options?: readonly CallOptionName[];
  };
  /** Tool name on the hosted MCP server (underscores); only the five operations become tools. */
  mcpTool: string;
  /** The scope the caller's token needs; null: any authenticated caller (account routes such as `me.get`). */
  scope: Scope | null;
  /** `optional`: works without a token (the node catalog); `required`: 401 without one. */
  auth: 'optional' | 'required';
  /** Credential kinds allowed (default all): minting tokens, for one, is not for personal access tokens. */
  kinds?: readonly TokenKind[];
  input: I;
  /** The JSON result; for `sse` operations, the result a client assembles from the stream. */
  output: O;
  /** `json`: one JSON body; `sse`: a `text/event-stream` of run events ending with `[DONE]`. */
  response: 'json' | 'sse';
  /**
   * Holds its answer open while a run goes on (a run's event stream, or `runs.node` waiting for
   * its node): the call takes one of its organization's stream slots first.
   */
  holdsStream?: boolean;
  /** Error codes the operation can answer with, besides the universal ones. */
  errors: readonly ErrorCode[];
  /** Whether calling it spends money (MCP annotations, CLI confirmations). */
  spendsMoney: boolean;
  /** Whether it leaves the world unchanged (MCP readOnlyHint). */
  readOnly: boolean;
  /** What an AI agent is told about it as an MCP tool; the five operations have one, routes none. */
  agent?: AgentGuide<I>;
}

/**
 * The agent-facing text of an operation, written once here for every MCP server: what it does,
 * what it costs, what it returns, and an input that works (tests validate it against `input`).
 * Another operation is named in the text as `{runs.node}`: each MCP server writes its own tool
 * name there (`runs_node` hosted, `runs.node` over stdio).
 */
export interface AgentGuide<I extends TSchema = TSchema> {
  description: string;
  example: Static<I>;
}

export type InputOf<Op extends Operation> = Static<Op['input']>;
export type OutputOf<Op extends Operation> = Static<Op['output']>;

/** Keeps the literal types of an operation definition while checking it against `Operation`. */
export function defineOperation<I extends TSchema, O extends TSchema, const N extends string, const R extends 'json' | 'sse'>(
  op: Operation<I, O> & { name: N; response: R },
): Operation<I, O> & { name: N; response: R } {
  return op;
}
