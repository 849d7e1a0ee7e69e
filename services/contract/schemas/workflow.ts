import { Type, type Static } from '@sinclair/typebox';
import { MAX_MAP_ENTRIES } from '../input-limits';
import { BuiltinConnectorIdSchema } from './connector';
import { strictObject } from './strict-object';

/**
 * One node of a workflow graph. `uses` is a platform node id, `input`, `output`, `const`, or a
 * mounted workflow `<org-slug>/<workflow-slug>@<selector>`. Each input is a literal JSON value
 * or a whole-string reference `${<nodeId>.<port>}`. Semantic rules (unique ids, references,
 * cycles, port types) are the engine's; this schema fixes the shape.
 */
export const GraphNodeSchema = strictObject({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  uses: Type.String({ minLength: 1, maxLength: 300 }),
  inputs: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: MAX_MAP_ENTRIES })),
  outputType: Type.Optional(BuiltinConnectorIdSchema),
  label: Type.Optional(Type.String({ maxLength: 500 })),
});
export type GraphNode = Static<typeof GraphNodeSchema>;

/** A workflow definition, schema version 2. */
export const WorkflowSchema = strictObject({
  version: Type.Literal(2, { description: 'Schema version, always 2' }),
  nodes: Type.Array(GraphNodeSchema, { maxItems: 10000 }),
});
export type Workflow = Static<typeof WorkflowSchema>;

/** A published, immutable workflow version. */
export const PublishedWorkflowSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  address: Type.Union([Type.String(), Type.Null()], { description: '<org-slug>/<workflow-slug>, or null if no slug is claimed' }),
  version: Type.String({ description: 'Resolved full semver' }),
  sequence: Type.Integer({ minimum: 1, description: 'Monotonic publish counter' }),
  workflow: WorkflowSchema,
});
export type PublishedWorkflow = Static<typeof PublishedWorkflowSchema>;
