import { Type } from '@sinclair/typebox';
import { MAX_MAP_ENTRIES } from '../input-limits';
import { defineOperation } from '../operation';
import { ArtifactInputSchema, OutputsSchema } from '../schemas/artifact';
import { MaxCostUsdSchema, SPEND_CAP_NOTE } from '../schemas/max-cost';
import { WorkflowSchema } from '../schemas/workflow';
import { strictObject } from '../schemas/strict-object';

/** `runs.create`: run a workflow (inline or by reference) and stream its events. */
export const runsCreate = defineOperation({
  name: 'runs.create',
  summary: 'Run a workflow; the response is a stream of run events',
  http: { method: 'POST', path: '/v1/runs', pathParams: [], options: ['maxDurationSeconds', 'idempotencyKey', 'webhookUrl', 'webhookEvents', 'outputCache'] },
  mcpTool: 'runs_create',
  scope: 'run',
  auth: 'required',
  input: strictObject(
    {
      workflow: Type.Optional(WorkflowSchema),
      workflowRef: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: '<id>@<version>; id is <org>/<slug> or a UUID' })),
      inputs: Type.Optional(Type.Record(Type.String(), ArtifactInputSchema, { maxProperties: MAX_MAP_ENTRIES, description: "Map from the workflow's input names to artifacts" })),
      maxCostUsd: Type.Optional(MaxCostUsdSchema),
    },
    {
      oneOf: [{ required: ['workflow'] }, { required: ['workflowRef'] }],
      'x-error': 'give exactly one of "workflow" (an inline definition) or "workflowRef" (a published reference such as "acme/flow@1.2.0")',
    },
  ),
  output: strictObject({ outputs: OutputsSchema }),
  response: 'sse',
  holdsStream: true,
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'insufficient_scope', 'insufficient_credit', 'not_found', 'rate_limited'],
  spendsMoney: true,
  readOnly: false,
  agent: {
    description:
      'Run a workflow and wait for it to finish: give exactly one of workflow (an inline definition, version 2) or workflowRef (a published workflow, <org>/<slug>@<version>), plus inputs (a map from input name to an artifact such as {"value": "text"}) and optionally maxCostUsd. ' +
      SPEND_CAP_NOTE +
      ' Returns { outputs }: a map from output name to an artifact ({ kind, value } inline, or { kind, ref } a URL to fetch for images, audio, video and files). ' +
      'Progress arrives as MCP progress notifications while it runs. On failure the result is an error carrying the run.failed code, its message and the run id; do not retry blindly.',
    example: {
      workflow: {
        version: 2,
        nodes: [
          { id: 'a', uses: 'input', outputType: 'FLOAT' },
          { id: 'sum', uses: 'math-add', inputs: { a: '${a.value}', b: 2 } },
          { id: 'result', uses: 'output', inputs: { value: '${sum.result}' } },
        ],
      },
      inputs: { a: { value: 40 } },
      maxCostUsd: 0.05,
    },
  },
});
