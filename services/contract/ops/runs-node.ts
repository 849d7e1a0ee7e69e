import { Type } from '@sinclair/typebox';
import { MAX_MAP_ENTRIES } from '../input-limits';
import { defineOperation } from '../operation';
import { ArtifactInputSchema, OutputsSchema } from '../schemas/artifact';
import { MaxCostUsdSchema, SPEND_CAP_NOTE } from '../schemas/max-cost';
import { strictObject } from '../schemas/strict-object';

/** `runs.node`: run one model or llm node without a graph; one JSON response. */
export const runsNode = defineOperation({
  name: 'runs.node',
  summary: 'Run a single model or llm node',
  http: { method: 'POST', path: '/v1/runs/node', pathParams: [], options: ['maxDurationSeconds', 'idempotencyKey', 'webhookUrl', 'webhookEvents', 'outputCache'] },
  mcpTool: 'runs_node',
  scope: 'run',
  auth: 'required',
  input: strictObject({
    node: Type.String({ minLength: 1, maxLength: 300, description: 'Node id' }),
    inputs: Type.Record(
      Type.String(),
      Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null(), ArtifactInputSchema], {
        // Said after the artifact branch's own errors when an object input is not a valid artifact.
        'x-object-hint': 'an object input is an artifact: {"kind":"image","ref":"https://…"} for a file port, {"kind":"structured","value":…} for a STRUCTURED port',
      }),
      { maxProperties: MAX_MAP_ENTRIES, description: 'Value ports take bare scalars; data ports take artifacts' },
    ),
    maxCostUsd: Type.Optional(MaxCostUsdSchema),
  }),
  output: strictObject({ outputs: OutputsSchema }),
  response: 'json',
  holdsStream: true,
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'insufficient_scope', 'insufficient_credit', 'not_found', 'run_failed', 'rate_limited'],
  spendsMoney: true,
  readOnly: false,
  agent: {
    description:
      'Run one model or llm node of the catalog without writing a workflow, and wait for its outputs. inputs is keyed by the node\'s input port names ({nodes.get} lists them): value ports take bare scalars, data ports (images, audio, files) take artifacts such as {"kind":"image","ref":"https://…"}. ' +
      SPEND_CAP_NOTE +
      ' Returns { outputs }: a map from output port name to an artifact ({ kind, value } inline, or { kind, ref } a URL). On failure the result is an error with the code, message and run id.',
    example: { node: 'math-add', inputs: { a: 1, b: 2 }, maxCostUsd: 0.01 },
  },
});
