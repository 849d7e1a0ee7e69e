import { Type } from '@sinclair/typebox';
import { defineOperation } from '../operation';
import { NodeSpecSchema } from '../schemas/node-spec';
import { strictObject } from '../schemas/strict-object';

/** `nodes.list`: search the node palette. */
export const nodesList = defineOperation({
  name: 'nodes.list',
  summary: 'List or search the node catalog',
  http: { method: 'GET', path: '/v1/nodes', pathParams: [] },
  mcpTool: 'nodes_list',
  scope: 'read',
  auth: 'optional',
  input: strictObject({
    q: Type.Optional(Type.String({ maxLength: 200, description: 'Case-insensitive match against node id, title and description' })),
    category: Type.Optional(Type.String({ maxLength: 200, description: 'Filter by category' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Maximum number of results' })),
  }),
  output: Type.Array(NodeSpecSchema),
  response: 'json',
  errors: ['validation_failed'],
  spendsMoney: false,
  readOnly: true,
  agent: {
    description:
      'Search the catalog of nodes (image models, LLMs, media and text utilities) that workflows and {runs.node} can use. Free and read-only. ' +
      'q matches node id, title and description (case-insensitive); category filters; limit caps the count. ' +
      'Returns an array of NodeSpec: { id, kind, title, category, description, inputs, outputs }, each port with its connector (type, optional, default, option values, bounds). ' +
      'Use the id with {nodes.get} for one node, as "uses" in a workflow, or as "node" in {runs.node}.',
    example: { q: 'math', limit: 5 },
  },
});
