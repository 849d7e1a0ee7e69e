import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Static, TSchema } from '@sinclair/typebox';
import { ALL_ERRORS_VALUE_BUDGET, scanInput } from './input-limits';
import { OPERATIONS, type OpInput, type OpName } from './registry';

/** One problem found in a value, with where it is. */
export interface ValidationIssue {
  /** Dotted path of the offending value, e.g. `workflow.nodes[2].uses`; `request` for the root. */
  path: string;
  message: string;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[]; message: string };

/**
 * The ajv instances of a process, compiled from the same schemas. `firstError` stops at the
 * first problem: every value is checked with it, so a valid one costs the least and a huge
 * invalid one (80,000 wrong-typed fields) is refused after its size keyword. `everyError` then
 * lists every problem at once, but only for inputs under `ALL_ERRORS_VALUE_BUDGET` values: its
 * work grows with the number of problems. `verbose` keeps the failing schema so messages can
 * name allowed fields and values.
 */
function createAjv(allErrors: boolean): Ajv {
  // ajv logs a schema it cannot compile before throwing the same error; the throw is enough (a
  // browser page whose CSP forbids generated code would show it as a console error on every call).
  const logger = { log: console.log, warn: console.warn, error: () => undefined };
  const ajv = new Ajv({ allErrors, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true, logger });
  addFormats(ajv, ['uri', 'uuid', 'date-time', 'email']);
  // Annotation keyword: a schema's own wording for its failures (see messageOf).
  ajv.addVocabulary(['x-error', 'x-object-hint']);
  return ajv;
}

const firstError = { ajv: createAjv(false), compiled: new WeakMap<TSchema, ValidateFunction>() };
const everyError = { ajv: createAjv(true), compiled: new WeakMap<TSchema, ValidateFunction>() };

function compiledIn(instance: typeof firstError, schema: TSchema): ValidateFunction {
  let fn = instance.compiled.get(schema);
  if (!fn) {
    fn = instance.ajv.compile(schema);
    instance.compiled.set(schema, fn);
  }
  return fn;
}

/** Compiles (once) and returns the validator of a schema that reports every problem. */
export function validatorFor(schema: TSchema): ValidateFunction {
  return compiledIn(everyError, schema);
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
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const { comparison, limit } = err.params as { comparison: string; limit: number };
      const about = typeof parent.description === 'string' ? ` (${parent.description})` : '';
      return { path: where, message: `${where} must be ${comparison} ${limit}, got ${JSON.stringify(err.data)}${about}` };
    }
    case 'maxItems':
      return { path: where, message: `${where} has ${(err.data as unknown[]).length} items; at most ${limitOf(err)} are allowed` };
    case 'maxProperties':
      return { path: where, message: `${where} has ${Object.keys(err.data as object).length} fields; at most ${limitOf(err)} are allowed` };
    case 'maxLength':
      return { path: where, message: `${where} is ${(err.data as string).length} characters long; at most ${limitOf(err)} are allowed` };
    case 'format':
      return { path: where, message: `${where} must be a valid ${(err.params as { format: string }).format}` };
    case 'pattern':
      return { path: where, message: `${where} ${err.message ?? 'has the wrong form'}: ${JSON.stringify(err.data)}` };
    default:
      return { path: where, message: `${where} ${err.message ?? 'is invalid'}` };
  }
}

function limitOf(err: ErrorObject): number {
  return (err.params as { limit: number }).limit;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * Turns ajv errors into caller-facing issues. Errors inside a failed oneOf/anyOf branch are
 * dropped in favour of the combinator's own message, which says what was expected. Linear in
 * the number of errors: a map of many failing values repeats one combinator's schema path.
 */
export function describeErrors(errors: readonly ErrorObject[]): ValidationIssue[] {
  const combinators = new Set(errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf').map((e) => e.schemaPath));
  // A union given an object, with one object branch: that branch's own errors say what to fix
  // ("ref must be a valid uri"), where "must be string or … object, got object" would not.
  const objectBranches = new Map<string, string>();
  for (const err of errors) {
    if (!combinators.has(err.schemaPath) || objectBranches.has(err.schemaPath)) continue;
    const branch = objectBranchOf(err);
    if (branch !== undefined) objectBranches.set(err.schemaPath, `${err.schemaPath}/${branch}`);
  }
  const insideCombinator = (schemaPath: string): boolean => {
    for (let cut = schemaPath.lastIndexOf('/'); cut > 0; cut = schemaPath.lastIndexOf('/', cut - 1)) {
      const prefix = schemaPath.slice(0, cut);
      if (!combinators.has(prefix)) continue;
      const kept = objectBranches.get(prefix);
      if (kept === undefined || !(schemaPath === kept || schemaPath.startsWith(`${kept}/`))) return true;
    }
    return false;
  };
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  const add = (issue: ValidationIssue) => {
    if (seen.has(issue.message)) return;
    seen.add(issue.message);
    issues.push(issue);
  };
  for (const err of errors) {
    if (insideCombinator(err.schemaPath)) continue;
    const hint = objectBranches.has(err.schemaPath) ? (err.parentSchema as Record<string, unknown> | undefined)?.['x-object-hint'] : undefined;
    if (objectBranches.has(err.schemaPath)) {
      // Said once, however many inputs it concerns.
      if (typeof hint === 'string') add({ path: formatPath(err.instancePath), message: hint });
      continue;
    }
    add(messageOf(err));
  }
  return issues;
}

/** The index of the only object branch of a failed union whose value is a plain object; else undefined. */
function objectBranchOf(err: ErrorObject): number | undefined {
  if (err.data === null || typeof err.data !== 'object' || Array.isArray(err.data)) return undefined;
  const branches = ((err.parentSchema as Record<string, unknown> | undefined)?.[err.keyword] as Record<string, unknown>[] | undefined) ?? [];
  const objects = branches.flatMap((b, i) => (b.type === 'object' ? [i] : []));
  return objects.length === 1 ? objects[0] : undefined;
}

/** Issues an error lists; the rest are counted ("and N more problems"). */
export const MAX_LISTED = 10;

/** Joins issues into one message; long lists are cut with a count of the rest. */
export function summarizeIssues(issues: readonly ValidationIssue[], total = issues.length): string {
  const listed = issues.slice(0, MAX_LISTED).map((i) => i.message);
  if (total > listed.length) listed.push(`and ${total - listed.length} more problems`);
  return listed.join('; ');
}

function failure<T>(issues: ValidationIssue[]): ValidationResult<T> {
  return { ok: false, issues: issues.slice(0, MAX_LISTED), message: summarizeIssues(issues) };
}

/**
 * Validates a value against a schema. First the limits no schema expresses (nesting depth, text
 * Postgres cannot store), then the schema, stopping at the first problem; every problem is then
 * listed only for inputs small enough for that to be cheap. At most `MAX_LISTED` issues return.
 */
export function validate<S extends TSchema>(schema: S, value: unknown): ValidationResult<Static<S>> {
  const scan = scanInput(value);
  if (scan.problem) return failure([scan.problem]);
  const first = compiledIn(firstError, schema);
  if (first(value)) return { ok: true, value: value as Static<S> };
  if (scan.values > ALL_ERRORS_VALUE_BUDGET) return failure(describeErrors(first.errors ?? []));
  const every = compiledIn(everyError, schema);
  every(value);
  return failure(describeErrors(every.errors ?? []));
}

/** Validates the input of an operation: every surface calls this. */
export function validateInput<K extends OpName>(op: K, value: unknown): ValidationResult<OpInput<K>> {
  return validate(OPERATIONS[op].input, value) as ValidationResult<OpInput<K>>;
}
