import fs from 'node:fs';
import Ajv, { type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { checkLiteral } from '../../engine';
import type { ProviderLimitSetting } from '../../platform/provider-limit-settings';
import { parseJsonPath } from '../json-path';
import { catalogLimits } from './catalog-limits';
import { inputConnector } from './media-entry-node';
import { CATALOG_ENTRY_SCHEMA, CATALOG_FILE_SCHEMA, MEDIA_PROVIDERS, type CatalogEntry, type MediaCatalogEntry } from './catalog-entry';
import { actualVariables, CHAT_INPUTS, estimateVariables } from './entry-variables';
import { FormulaError, parsePriceFormula } from './price-formula';

const MEDIA_TYPES = new Set(['IMAGE', 'AUDIO', 'VIDEO']);

/** A catalog file the process cannot start with; the message names the file, the entry and the field. */
export class CatalogFileError extends Error {
  override readonly name = 'CatalogFileError';
}

const ajv = new Ajv({ allErrors: false, strict: false });
// The provider first: it decides which fields the rest of the entry may have.
const validateProvider = ajv.compile({ type: 'object', required: ['provider'], properties: { provider: CATALOG_ENTRY_SCHEMA.properties.provider } });
const validateEntry = ajv.compile(CATALOG_ENTRY_SCHEMA);
const validateFile = ajv.compile(CATALOG_FILE_SCHEMA);

/** `inputs.prompt.type` from ajv's `/inputs/prompt/type`, with what was wrong. */
function describe(error: ErrorObject): { field: string; message: string } {
  const field = error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return { field: field === '' ? extra : `${field}.${extra}`, message: 'is not a field of a catalog entry here (misspelt?)' };
  }
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return { field: field === '' ? missing : `${field}.${missing}`, message: 'is required' };
  }
  if (error.keyword === 'enum') return { field, message: `must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}` };
  return { field, message: error.message ?? 'is invalid' };
}

/** The most specific ajv error: the branch of `if/then/else` that applied, not the `if` itself. */
function firstError(errors: readonly ErrorObject[] | null | undefined): ErrorObject | undefined {
  return errors?.find((e) => e.keyword !== 'if') ?? errors?.[0];
}

/** What a catalog file states: its entries, and the providers' limits of its `limits:` map. */
export interface CatalogDocument {
  entries: CatalogEntry[];
  limits: ProviderLimitSetting[];
}

/** The entries of a catalog file (readCatalogDocument, without its limits). */
export function readCatalogFile(file: string): CatalogEntry[] {
  return readCatalogDocument(file).entries;
}

/**
 * Reads a catalog file: YAML, a `nodes` list of entries and an optional `limits:` map, each checked against the entry schema
 * and then for what a schema cannot say (price formulas parse and read only known names; ports
 * named by the request, the outputs and the example exist; ids unique within the file), and the
 * limits with the bounds of `PROVIDER_LIMITS` (catalog-limits.ts). Throws
 * `CatalogFileError`, e.g. `catalog/hosted-models.yaml: entry 3 ("fal-flux-schnell"): price.estimate: unknown variable "num_imgs"`.
 * Clashes with other files' and code nodes' ids are the registry's to find.
 */
export function readCatalogDocument(file: string): CatalogDocument {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CatalogFileError(`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let document: unknown;
  try {
    document = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw new CatalogFileError(`${file}: is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!validateFile(document)) {
    const { field, message } = describe(firstError(validateFile.errors)!);
    throw new CatalogFileError(`${file}: ${field === '' ? 'the file' : field} ${message} (a catalog file is an object with a "nodes" list)`);
  }
  const { nodes, limits } = document as { nodes: unknown[]; limits?: unknown };
  const seen = new Set<string>();
  const entries = nodes.map((raw, index) => {
    const id = typeof (raw as { id?: unknown } | null)?.id === 'string' ? (raw as { id: string }).id : undefined;
    const fail = (field: string, message: string): never => {
      throw new CatalogFileError(`${file}: entry ${index + 1}${id === undefined ? '' : ` (${JSON.stringify(id)})`}: ${field === '' ? '' : `${field}: `}${message}`);
    };
    for (const validate of [validateProvider, validateEntry]) {
      if (validate(raw)) continue;
      const { field, message } = describe(firstError(validate.errors)!);
      return fail(field, message);
    }
    const entry = raw as CatalogEntry;
    if (seen.has(entry.id)) fail('id', `"${entry.id}" is given to an earlier entry of this file too`);
    seen.add(entry.id);
    checkEntry(entry, fail);
    return entry;
  });
  const failLimit = (field: string, message: string): never => {
    throw new CatalogFileError(`${file}: ${field}: ${message}`);
  };
  return { entries, limits: catalogLimits(limits, failLimit) };
}

/** Reads every file, in order; the first bad one throws. */
export function readCatalogFiles(files: readonly string[]): CatalogEntry[] {
  return files.flatMap((file) => readCatalogFile(file));
}

function checkEntry(entry: CatalogEntry, fail: (field: string, message: string) => never): void {
  const known = estimateVariables(entry);
  if (isMedia(entry)) checkMediaEntry(entry, fail);
  for (const [which, allowed] of [['estimate', known], ['actual', actualVariables(entry)]] as const) {
    let names: ReadonlySet<string>;
    try {
      names = parsePriceFormula(entry.price[which]).variables;
    } catch (err) {
      if (err instanceof FormulaError) return fail(`price.${which}`, err.message);
      throw err;
    }
    for (const name of names) {
      if (!allowed.has(name)) fail(`price.${which}`, `unknown variable "${name}"; it may use ${[...allowed].map((v) => `"${v}"`).join(', ')}`);
    }
  }
  const inputPorts = isMedia(entry) ? Object.keys(entry.inputs) : [...CHAT_INPUTS, ...(entry.vision ? ['image'] : [])];
  for (const name of Object.keys(entry.example ?? {})) {
    if (!inputPorts.includes(name)) fail(`example.${name}`, `is not an input port of the entry (${inputPorts.join(', ')})`);
  }
  if (!entry.provider.startsWith('openai-')) {
    for (const field of ['baseUrl', 'apiKeyEnv'] as const) {
      if (field in entry && entry[field as keyof CatalogEntry] !== undefined && !(entry.provider === 'anthropic' && field === 'apiKeyEnv')) fail(field, `is for OpenAI-compatible entries; ${entry.provider} entries use the configured base URL`);
    }
  }
}

function checkMediaEntry(entry: MediaCatalogEntry, fail: (field: string, message: string) => never): void {
  for (const [field, port] of Object.entries(entry.request?.fields ?? {})) {
    if (!Object.hasOwn(entry.inputs, port)) fail(`request.fields.${field}`, `names "${port}", which is not an input port of the entry`);
  }
  for (const [name, port] of Object.entries(entry.inputs)) {
    if (port.maxLength !== undefined && port.type !== 'TEXT') fail(`inputs.${name}.maxLength`, 'is for TEXT ports');
    // A default and an example value must pass the port's own checks, as a caller's value would.
    const problemOf = (value: unknown) => (MEDIA_TYPES.has(port.type) ? 'cannot be given for a media port' : checkLiteral(inputConnector(port), value));
    if (port.default !== undefined) {
      const problem = problemOf(port.default);
      if (problem) fail(`inputs.${name}.default`, problem);
    }
    if (entry.example && Object.hasOwn(entry.example, name)) {
      const problem = problemOf(entry.example[name]);
      if (problem) fail(`example.${name}`, problem);
    }
  }
  if (Object.hasOwn(entry.outputs, 'usage')) fail('outputs.usage', 'is the name of the output every catalog node adds (the measures its price reads); choose another');
  for (const [name, port] of Object.entries(entry.outputs)) {
    for (const key of ['from', 'item'] as const) {
      const path = port[key];
      if (path === undefined) continue;
      const parsed = parseJsonPath(path);
      if (!parsed.ok) fail(`outputs.${name}.${key}`, `"${path}" ${parsed.message}`);
    }
    if (port.item !== undefined && !port.array) fail(`outputs.${name}.item`, 'is for array outputs (array: true)');
    if (port.join !== undefined && port.type !== 'TEXT') fail(`outputs.${name}.join`, 'is for TEXT outputs');
  }
}

export function isMedia(entry: CatalogEntry): entry is MediaCatalogEntry {
  return (MEDIA_PROVIDERS as readonly string[]).includes(entry.provider);
}
