import { Type, type Static } from '@sinclair/typebox';
import { strictObject } from './strict-object';

/** Built-in connector ids (the value types a port carries). */
export const BUILTIN_CONNECTOR_IDS = [
  'IMAGE', 'TEXT', 'AUDIO', 'VIDEO', 'FLOAT', 'INT', 'BOOLEAN', 'EMBEDDING', 'FILE', 'STRUCTURED',
] as const;

export type BuiltinConnectorId = (typeof BUILTIN_CONNECTOR_IDS)[number];
/** A built-in connector id or `CUSTOM:<name>`. */
export type ConnectorId = BuiltinConnectorId | `CUSTOM:${string}`;

/** Connector ids accepted as `outputType` on `input` and `const` nodes (no custom types). */
export const BuiltinConnectorIdSchema = Type.Union(BUILTIN_CONNECTOR_IDS.map((id) => Type.Literal(id)), {
  description: 'A built-in connector id',
});

export const ConnectorIdSchema = Type.Unsafe<ConnectorId>(
  Type.String({
    pattern: `^(${BUILTIN_CONNECTOR_IDS.join('|')}|CUSTOM:[A-Za-z][A-Za-z0-9_.-]*)$`,
    description: 'A built-in connector id or CUSTOM:<name>',
  }),
);

/** The type of a port and its constraints. */
export const ConnectorSchema = strictObject({
  id: ConnectorIdSchema,
  isOptional: Type.Boolean({ description: 'Whether the port may be omitted' }),
  isArray: Type.Boolean({ description: 'Whether the port takes a list' }),
  defaultValue: Type.Optional(Type.Unknown({ description: 'Used when the port is omitted' })),
  optionValues: Type.Optional(Type.Array(Type.Unknown(), { description: 'Allowed enum values' })),
  minValue: Type.Optional(Type.Number()),
  maxValue: Type.Optional(Type.Number()),
  maxLength: Type.Optional(Type.Integer({ minimum: 1, description: 'Optional; the most characters a TEXT value may have (each item of a list). A longer one fails validation before anything runs' })),
});
export type Connector = Static<typeof ConnectorSchema>;
