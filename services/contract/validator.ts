import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Static, TSchema } from '@sinclair/typebox';
import { OPERATIONS, type OpInput, type OpName } from './registry';

/** One problem found in a value, with where it is. */
export interface ValidationIssue {
  /** Dotted path of the offending value, e.g. `workflow.nodes[2].uses`; `request` for the root. */
  path: string;
  message: string;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[]; message: string };

/**
 * The one ajv instance of a process. `allErrors` reports every problem at once; `verbose` keeps
 * the failing schema so messages can name allowed fields and values.
 */
const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true });
addFormats(ajv, ['uri', 'uuid', 'date-time', 'email']);
// Annotation keyword: a schema's own wording for its oneOf/anyOf failure.
ajv.addVocabulary(['x-error']);

const compiled = new WeakMap<TSchema, ValidateFunction>();

/** Compiles (once) and returns the validator of a schema. */
export function validatorFor(schema: TSchema): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

function formatPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  let out = '';
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  return out === '' ? 'request' : out;
}

function describeAllowed(values: unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

function messageOf(err: ErrorObject): ValidationIssue {
  const where = formatPath(err.instancePath);
  const parent = (err.parentSchema ?? {}) as Record<string, unknown>;
  switch (err.keyword) {
    case 'additionalProperties': {
      const field = (err.params as { additionalProperty: string }).additionalProperty;
      const allowed = Object.keys((parent.properties as object | undefined) ?? {});
      const hint = allowed.length ? `; allowed fields: ${allowed.join(', ')}` : '';
      return { path: formatPath(err.instancePath, field), message: `unknown field "${field}" in ${where}${hint}` };
    }
    case 'required': {
      const field = (err.params as { missingProperty: string }).missingProperty;
      return { path: formatPath(err.instancePath, field), message: `missing required field "${field}" in ${where}` };
    }
    case 'type':
      return { path: where, message: `${where} must be ${(err.params as { type: string }).type}, got ${typeName(err.data)}` };
    case 'const':
      return { path: where, message: `${where} must be ${JSON.stringify((err.params as { allowedValue: unknown }).allowedValue)}` };
    case 'enum':
      return { path: where, message: `${where} must be one of ${describeAllowed((err.params as { allowedValues: unknown[] }).allowedValues)}` };
    case 'oneOf':
    case 'anyOf': {
      if (typeof parent['x-error'] === 'string') return { path: where, message: `${where}: ${parent['x-error']}` };
      const branches = (parent[err.keyword] as Record<string, unknown>[] | undefined) ?? [];
      if (branches.length > 0 && branches.every((b) => 'const' in b)) {
        return { path: where, message: `${where} must be one of ${describeAllowed(branches.map((b) => b.const))}, got ${JSON.stringify(err.data)}` };
      }
      const types = branches.map((b) => (typeof b.type === 'string' ? b.type : 'an object of the documented shape'));
      return { path: where, message: `${where} must be ${[...new Set(types)].join(' or ')}, got ${typeName(err.data)}` };
    }
    case 'format':
      return { path: where, message: `${where} must be a valid ${(err.params as { format: string }).format}` };
    case 'pattern':
      return { path: where, message: `${where} ${err.message ?? 'has the wrong form'}: ${JSON.stringify(err.data)}` };
    default:
      return { path: where, message: `${where} ${err.message ?? 'is invalid'}` };
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * Turns ajv errors into caller-facing issues. Errors inside a failed oneOf/anyOf branch are
 * dropped in favour of the combinator's own message, which says what was expected.
 */
export function describeErrors(errors: readonly ErrorObject[]): ValidationIssue[] {
  const combinators = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf').map((e) => e.schemaPath + '/');
  const kept = errors.filter((e) => !combinators.some((prefix) => e.schemaPath.startsWith(prefix)));
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const err of kept) {
    const issue = messageOf(err);
    if (seen.has(issue.message)) continue;
    seen.add(issue.message);
    issues.push(issue);
  }
  return issues;
}

const MAX_LISTED = 10;

/** Joins issues into one message; long lists are cut with a count of the rest. */
export function summarizeIssues(issues: readonly ValidationIssue[]): string {
  const listed = issues.slice(0, MAX_LISTED).map((i) => i.message);
  if (issues.length > MAX_LISTED) listed.push(`and ${issues.length - MAX_LISTED} more problems`);
  return listed.join('; ');
}

/** Validates a value against a schema. */
export function validate<S extends TSchema>(schema: S, value: unknown): ValidationResult<Static<S>> {
  const fn = validatorFor(schema);
  if (fn(value)) return { ok: true, value: value as Static<S> };
  const issues = describeErrors(fn.errors ?? []);
  return { ok: false, issues, message: summarizeIssues(issues) };
}

/** Validates the input of an operation: every surface calls this. */
export function validateInput<K extends OpName>(op: K, value: unknown): ValidationResult<OpInput<K>> {
  return validate(OPERATIONS[op].input, value) as ValidationResult<OpInput<K>>;
}
