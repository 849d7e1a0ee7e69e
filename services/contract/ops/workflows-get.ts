import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { PublishedWorkflowSchema } from '../schemas/workflow';
import { strictObject } from '../schemas/strict-object';

/** `workflows.get`: a published workflow version by address or UUID and selector. */
export const workflowsGet = defineOperation({
  name: 'workflows.get',
  summary: 'Get a published workflow version',
  http: { method: 'GET', path: '/v1/workflows/:id', pathParams: ['id'] },
  mcpTool: 'workflows_get',
  scope: 'read',
  auth: 'required',
  input: strictObject({
    id: Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'Published address <org-slug>/<workflow-slug> or workflow UUID, optionally with @<selector>',
    }),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'latest (default), a full semver, or a bare major' })),
  }),
  output: PublishedWorkflowSchema,
  response: 'json',
  errors: ['validation_failed', 'bad_request', 'unauthorized', 'insufficient_scope', 'not_found'],
  spendsMoney: false,
  readOnly: true,
  agent: {
    description:
      'Get a published workflow version: id is its address <org-slug>/<workflow-slug> (or its UUID); version is latest (the default), a full semver such as 1.2.0, or a bare major such as 2 (its highest version). Free and read-only. ' +
      'Returns { id, address, version, sequence, workflow }; the workflow\'s nodes whose uses is "input" are the inputs {runs.create} takes (their id is the input name; without inputs.default they are required).',
    example: { id: 'acme/summarize', version: '1' },
  },
});
