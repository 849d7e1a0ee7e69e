import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { OpName } from '../contract';
import { ToolFailure } from './tool-failure';

/** A tool's answer: the operation's output as JSON text. */
export function successResult(output: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(output) }] };
}

/**
 * A failure as the agent reads it: `isError` and one JSON document with the code, the message,
 * the run id when a run was started, a hint it can act on, and the fields particular to the code.
 * The MCP surface's one translator of failures (CONVENTIONS.md: one error model).
 */
export function failureResult(failure: ToolFailure, nameOf: (op: OpName) => string): CallToolResult {
  const body = {
    error: { code: failure.code, message: failure.message },
    ...(failure.runId === undefined ? {} : { runId: failure.runId }),
    hint: hintFor(failure, nameOf),
    ...failure.details,
  };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** Anything a caller threw, as a ToolFailure; an unknown throw says no more than that it happened. */
export function asToolFailure(err: unknown): ToolFailure {
  if (err instanceof ToolFailure) return err;
  return new ToolFailure({ code: 'internal', message: 'the tool failed unexpectedly; the failure was logged', cause: err });
}

/** What the agent can do about a failure, by its code (never by its message). */
function hintFor(failure: ToolFailure, nameOf: (op: OpName) => string): string {
  const run = failure.runId === undefined ? '' : ` The run's record is GET /v1/runs/${failure.runId}.`;
  switch (failure.code) {
    case 'spend_cap_exceeded':
      return `The run stopped before it would have spent more than its cap. If the cost is acceptable, call again with a larger maxCostUsd (at most 1.00 USD per run; the default is 0.50).${run}`;
    case 'validation_failed':
      return `Fix the input the message names and call again; ${nameOf('nodes.get')} shows a node's ports, ${nameOf('workflows.get')} a published workflow's inputs.${run}`;
    case 'insufficient_credit': {
      const balance = typeof failure.details.balanceUsd === 'number' ? ` (available balance: ${failure.details.balanceUsd} USD)` : '';
      return `The organization's balance does not cover a run${balance}. Someone must add credit; calling again will not help.`;
    }
    case 'insufficient_scope':
      return 'The access token lacks the scope the message names (runs need scope run, reads scope read). Use a token that has it: create one in the web editor under Settings, API tokens.';
    case 'forbidden':
      return 'This credential may not make this call; use a personal access token or sign in again.';
    case 'unauthorized':
      return 'The access token is missing, unknown, expired or revoked; the server must be given a valid one (SERVICE_TOKEN for the local server, a new sign-in for the hosted one).';
    case 'not_found':
      return `Check the id: ${nameOf('nodes.list')} searches the node catalog; a workflow is <org-slug>/<workflow-slug> with a published version.`;
    case 'rate_limited': {
      const wait = typeof failure.details.retryAfterSeconds === 'number' ? `${failure.details.retryAfterSeconds} seconds` : 'a minute';
      return `Too many calls: wait ${wait}, then call again.`;
    }
    case 'bad_request':
    case 'invalid_json':
    case 'payload_too_large':
      return 'Change the input as the message says, then call again.';
    case 'cancelled':
      return 'Following stopped because the call was cancelled; the run itself goes on.';
    case 'internal':
    case 'unavailable':
    case 'connection_failed':
      return failure.runId === undefined
        ? 'The service failed or could not be reached; calling again later may work.'
        : `Following the run failed, but the run may have gone on: read its outcome before running again, so as not to pay twice.${run}`;
    default:
      return failure.runId === undefined
        ? 'The call failed; read the message before calling again.'
        : `The run failed. Do not retry blindly: read the message, then change the inputs, the node or the workflow.${run}`;
  }
}
