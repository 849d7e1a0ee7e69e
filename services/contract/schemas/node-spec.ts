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
});
export type NodeSpec = Static<typeof NodeSpecSchema>;
