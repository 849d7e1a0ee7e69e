import { InvalidArgumentError, Option } from 'commander';

/** The little of a JSON Schema the command line needs. */
interface FieldSchema {
  type?: string | string[];
  description?: string;
  anyOf?: FieldSchema[];
  oneOf?: FieldSchema[];
  enum?: unknown[];
  const?: unknown;
}

interface ObjectSchema {
  properties?: Record<string, FieldSchema>;
  required?: string[];
}

/** A command-line option for one input field, and the field it fills. */
export interface FieldOption {
  field: string;
  option: Option;
}

const kebab = (name: string): string => name.replace(/_/g, '-').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function typesOf(schema: FieldSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type;
  if (typeof schema.type === 'string') return [schema.type];
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return branches.flatMap(typesOf);
  if (schema.const !== undefined) return [typeof schema.const];
  return [];
}

/**
 * Reads a command-line word as the field's schema types it: numbers for `integer`/`number`,
 * `true`/`false` for `boolean`, JSON for objects and arrays, text otherwise. Range and form are
 * left to the contract's own validation, which the SDK runs before sending.
 */
export function parserOf(field: string, schema: FieldSchema): (text: string) => unknown {
  const types = typesOf(schema);
  return (text: string) => {
    if (types.includes('integer') || types.includes('number')) {
      const value = Number(text);
      if (text.trim() !== '' && Number.isFinite(value)) return value;
      if (!types.includes('string')) throw new InvalidArgumentError(`--${kebab(field)} takes a number, got ${JSON.stringify(text)}`);
    }
    if (types.includes('boolean') && (text === 'true' || text === 'false')) return text === 'true';
    if (types.includes('object') || types.includes('array') || types.length === 0) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        if (!types.includes('string')) throw new InvalidArgumentError(`--${kebab(field)} takes JSON, got ${JSON.stringify(text.slice(0, 60))}`);
      }
    }
    return text;
  };
}

/**
 * One option per field of an operation's input schema, its help text the field's own
 * description: adding a field to the contract adds the option. `skip` leaves out fields a
 * command takes another way (a positional argument).
 */
export function fieldOptions(schema: unknown, skip: readonly string[] = []): FieldOption[] {
  const object = schema as ObjectSchema;
  const required = new Set(object.required ?? []);
  return Object.entries(object.properties ?? {})
    .filter(([field]) => !skip.includes(field))
    .map(([field, fieldSchema]) => {
      const types = typesOf(fieldSchema);
      const placeholder = types.includes('object') || types.includes('array') ? 'json' : types.includes('integer') || types.includes('number') ? 'n' : 'value';
      const help = `${fieldSchema.description ?? field}${required.has(field) ? ' (required)' : ''}`;
      const option = new Option(`--${kebab(field)} <${placeholder}>`, help).argParser(parserOf(field, fieldSchema));
      return { field, option };
    });
}

/** The input object from the parsed options: each field under its contract name. */
export function inputOf(fields: readonly FieldOption[], parsed: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const { field, option } of fields) {
    const value = parsed[option.attributeName()];
    if (value !== undefined) input[field] = value;
  }
  return input;
}
