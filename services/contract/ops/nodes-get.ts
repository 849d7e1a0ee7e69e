import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { NodeSpecSchema } from '../schemas/node-spec';
import { strictObject } from '../schemas/strict-object';

/** `nodes.get`: one node with its full port map. */
export const nodesGet = defineOperation({
  name: 'nodes.get',
  summary: 'Get one node with its full port map (defaults, option values, bounds)',
  http: { method: 'GET', path: '/v1/nodes/:id', pathParams: ['id'] },
  mcpTool: 'nodes_get',
  scope: 'read',
  auth: 'optional',
  input: strictObject({ id: Type.String({ minLength: 1, maxLength: 300, description: 'Node id' }) }),
  output: NodeSpecSchema,
  response: 'json',
  errors: ['validation_failed', 'not_found'],
  spendsMoney: false,
  readOnly: true,
});
