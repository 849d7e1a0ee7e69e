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
  agent: {
    description:
      "Get one node of the catalog by id, with its full port map: each input and output port's connector type, whether it is optional, its default, its allowed option values and numeric bounds. Free and read-only. " +
      'Returns a NodeSpec { id, kind, title, category, description, inputs, outputs }. Read it before {runs.node} or before wiring the node into a workflow, to give valid inputs; an unknown id is not_found (search with {nodes.list}).',
    example: { id: 'math-add' },
  },
});
