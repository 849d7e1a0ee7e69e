import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { strictObject } from '../schemas/strict-object';

const count = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description });

const QueueStatusSchema = Type.Object({
  fairScheduling: Type.Boolean({ description: 'Whether steps of different organizations take turns (docs/scheduling.md); false: one FIFO queue, and the counts below are null' }),
  waitingSteps: count("Your organization's step jobs waiting for its turn"),
  dispatchedSteps: count("Your organization's step jobs in the shared queue or running (at most `limit`)"),
  limit: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'Step jobs your organization may have in the queue or running at once; null: no limit' }),
  limitIsOwn: Type.Boolean({ description: "Whether the limit is your organization's own (set by an operator) rather than the deployment's default" }),
  organizationsWaiting: count('Organizations with step jobs waiting for their turn, yours included: each gets a turn in round robin'),
  providerLimits: Type.Array(
    Type.Object({
      provider: Type.String({ description: 'A limit the operator stated (docs/providers.md, Provider limits): a provider, e.g. `openai`, or one model of it, e.g. `openai/gpt-4o-mini`' }),
      waitingSteps: Type.Integer({ minimum: 0, description: "Your organization's provider requests waiting for their turn under this limit, across all workers (organizations take turns)" }),
      blockedBy: Type.Union([Type.Literal('requests'), Type.Literal('tokens'), Type.Literal('calls'), Type.Literal('paused'), Type.Null()], {
        description: 'What the next request waits for: requests or tokens per minute, a concurrent call to end, or the provider having asked the fleet to slow down (a 429); null: nothing waits',
      }),
    }),
    { description: 'Each provider limit in force, and how many of your steps wait on it; empty when the operator stated none' },
  ),
});

/** `GET /v1/queue`: the caller's organization's place in the step queue (docs/scheduling.md). */
export const queueGet = defineOperation({
  name: 'queue.get',
  summary: "Your organization's steps waiting and running, its concurrency limit, and its steps waiting on providers' limits",
  http: { method: 'GET', path: '/v1/queue', pathParams: [], noStore: true },
  mcpTool: 'queue_get',
  scope: 'read',
  auth: 'required',
  input: strictObject({}),
  output: QueueStatusSchema,
  response: 'json',
  errors: ['unauthorized', 'insufficient_scope', 'rate_limited', 'unavailable'],
  spendsMoney: false,
  readOnly: true,
});
