import { randomUUID } from 'node:crypto';
import type { TSchema } from '@sinclair/typebox';

/**
 * The contract's input schemas read as plain JSON Schema (TypeBox schemas are JSON Schema with
 * symbol-keyed extras): a valid example of each, and every place in that example a hostile
 * request can change. The fault suite's S1 generator (hostile-requests.ts) mutates those places.
 */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  format?: string;
}

export type Key = string | number;

/** A place in an input: the value at `path` (absent: an optional property the example leaves out). */
export interface Site {
  path: Key[];
  schema: Schema;
  present: boolean;
}

export const asSchema = (schema: TSchema): Schema => schema as unknown as Schema;

function typesOf(schema: Schema): string[] {
  if (schema.type === undefined) return [];
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

/** The properties an example of an object schema holds: all, except the other branches of a oneOf of `required` lists. */
function exampleProperties(schema: Schema): string[] {
  const all = Object.keys(schema.properties ?? {});
  if (!schema.oneOf) return all;
  const chosen = new Set([...(schema.required ?? []), ...(schema.oneOf[0]?.required ?? [])]);
  return all.filter((name) => chosen.has(name));
}

function exampleString(schema: Schema): string {
  switch (schema.format) {
    case 'uuid':
      return randomUUID();
    case 'uri':
      return 'https://example.com/a.png';
    case 'date-time':
      return new Date(0).toISOString();
    case 'email':
      return 'a@example.com';
    default:
      return 'a'.repeat(Math.max(schema.minLength ?? 1, 1));
  }
}

/** A value valid against `schema` (the caller checks it with the contract's validator). */
export function exampleOf(schema: Schema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const types = typesOf(schema);
  if (types.length === 0) {
    const branch = schema.anyOf?.[0] ?? schema.oneOf?.[0];
    if (branch && !schema.properties) return exampleOf(branch);
    if (!schema.properties && !schema.patternProperties) return 'x';
  }
  const type = types[0] ?? 'object';
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of exampleProperties(schema)) out[name] = exampleOf(schema.properties![name]!);
      const pattern = Object.values(schema.patternProperties ?? {})[0];
      if (pattern) out.k = exampleOf(pattern);
      return out;
    }
    case 'array':
      return Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, () => exampleOf(schema.items ?? {}));
    case 'string':
      return exampleString(schema);
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return 'x';
  }
}

/** The branch of a union that `value` was built from (the first), or the schema itself. */
function resolved(schema: Schema): Schema {
  if (typesOf(schema).length > 0 || schema.properties || schema.const !== undefined || schema.enum) return schema;
  return schema.anyOf?.[0] ?? schema.oneOf?.[0] ?? schema;
}

/** Every place in `value` (built by exampleOf from `schema`), its own root included. */
export function sitesOf(schema: Schema, value: unknown, path: Key[] = []): Site[] {
  const sites: Site[] = [{ path, schema, present: true }];
  const shape = resolved(schema);
  if (Array.isArray(value)) {
    value.forEach((item, i) => sites.push(...sitesOf(shape.items ?? {}, item, [...path, i])));
  } else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const [name, child] of Object.entries(shape.properties ?? {})) {
      if (name in record) sites.push(...sitesOf(child, record[name], [...path, name]));
      else sites.push({ path: [...path, name], schema: child, present: false });
    }
    const pattern = Object.values(shape.patternProperties ?? {})[0];
    if (pattern && 'k' in record) sites.push(...sitesOf(pattern, record.k, [...path, 'k']));
  }
  return sites;
}

/** The path as the service's messages write it: `workflow.nodes[0].id`, `request` for the root. */
export function formatPath(path: readonly Key[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? key : `.${key}`;
  return out === '' ? 'request' : out;
}

/** A copy of `root` with the value at `path` replaced (`remove`: deleted). */
export function withValue(root: unknown, path: readonly Key[], value: unknown, remove = false): unknown {
  if (path.length === 0) return value;
  const copy: unknown = structuredClone(root);
  let at = copy as Record<Key, unknown>;
  for (const key of path.slice(0, -1)) at = at[key] as Record<Key, unknown>;
  const last = path[path.length - 1]!;
  if (remove) delete at[last];
  // defineProperty: a key named __proto__ becomes an own field, as JSON.parse makes it on the server.
  else Object.defineProperty(at, last, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

export { typesOf };
