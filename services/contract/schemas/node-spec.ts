import { Type, type Static } from '@sinclair/typebox';
import { ConnectorSchema } from './connector';
import { strictObject } from './strict-object';

/** A named port of a node. */
export const PortSchema = strictObject({
  name: Type.String({ description: 'Same as its key in the port map' }),
  connector: ConnectorSchema,
});
export type Port = Static<typeof PortSchema>;

export const NODE_KINDS = ['model', 'llm', 'const'] as const;
export type NodeKind = (typeof NODE_KINDS)[number];

/** The published interface of a platform node; contains nothing caller-specific. */
export const NodeSpecSchema = strictObject({
  id: Type.String(),
  kind: Type.Union(NODE_KINDS.map((k) => Type.Literal(k))),
  title: Type.String(),
  category: Type.String(),
  description: Type.String(),
  inputs: Type.Record(Type.String(), PortSchema),
  outputs: Type.Record(Type.String(), PortSchema),
  example: Type.Optional(Type.Record(Type.String(), Type.Unknown(), {
    description: 'Optional; example values for some of its inputs (value ports only), as a caller would write them in a workflow: display metadata for the palette and `svc nodes`',
  })),
});
export type NodeSpec = Static<typeof NodeSpecSchema>;
