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
});
