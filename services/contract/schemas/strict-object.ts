import { Type, type ObjectOptions, type TProperties, type TObject } from '@sinclair/typebox';

/** An object schema that rejects unknown fields: every schema that accepts input uses it. */
export function strictObject<T extends TProperties>(properties: T, options: ObjectOptions = {}): TObject<T> {
  return Type.Object(properties, { ...options, additionalProperties: false });
}
