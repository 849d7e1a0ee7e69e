import type { Artifact, ArtifactInput, ArtifactKind, NodeSpec, OpInput } from '../../sdk/src/index';

/** One input of `runs.node`: a bare scalar or an artifact. */
type NodeInput = OpInput<'runs.node'>['inputs'][string];
import { usageError } from './cli-error';
import { booleanOf, coerceScalar, jsonOf, kindOfUrl, numberOf, type Assignment, type InputValue } from './input-values';

/** Stores a local file and answers its ref artifact (`uploadFile` of the SDK, bound to a client). */
export type Uploader = (filePath: string) => Promise<Artifact>;

const FILE_KINDS: Readonly<Record<string, ArtifactKind>> = { IMAGE: 'image', AUDIO: 'audio', VIDEO: 'video', FILE: 'file' };
const VALUE_KINDS: Readonly<Record<string, ArtifactKind>> = { TEXT: 'text', INT: 'int', FLOAT: 'float', BOOLEAN: 'boolean', STRUCTURED: 'structured', EMBEDDING: 'embedding' };

/**
 * A ref artifact of a URL or an uploaded file. A file connector decides the kind (the service
 * insists they agree); elsewhere the URL's extension suggests it.
 */
async function refArtifact(value: Extract<InputValue, { type: 'url' | 'file' }>, connectorId: string | undefined, upload: Uploader): Promise<ArtifactInput> {
  if (value.type === 'file') return upload(value.path);
  const fileKind = connectorId === undefined ? undefined : FILE_KINDS[connectorId];
  return { kind: fileKind ?? kindOfUrl(value.url), ref: value.url };
}

/** A plain value in the type of a value connector, or an error naming the input, its type and what was given. */
function typedValue(text: string, connectorId: string, what: string): unknown {
  switch (connectorId) {
    case 'TEXT':
      return text;
    case 'INT':
      return numberOf(text, what, true);
    case 'FLOAT':
      return numberOf(text, what, false);
    case 'BOOLEAN':
      return booleanOf(text, what);
    default:
      return jsonOf(text, what);
  }
}

/**
 * `svc run`'s inputs: each value an artifact typed by the connector of the workflow's input
 * node of that name (`TEXT` stays text, "42" included); an unknown name lists the declared ones.
 */
export async function workflowInputs(assignments: readonly Assignment[], declared: ReadonlyMap<string, string>, upload: Uploader): Promise<Record<string, ArtifactInput>> {
  const inputs: Record<string, ArtifactInput> = {};
  for (const { name, value } of assignments) {
    const connectorId = declared.get(name);
    if (connectorId === undefined) {
      const names = [...declared.keys()];
      throw usageError(`the workflow has no input "${name}"; ${names.length === 0 ? 'it declares no inputs' : `its inputs: ${names.map((n) => `${n} (${declared.get(n)})`).join(', ')}`}`, 'unknown_input');
    }
    if (Object.hasOwn(inputs, name)) throw usageError(`input "${name}" is given twice`);
    const what = `input "${name}" (${connectorId})`;
    if (value.type !== 'plain') {
      inputs[name] = await refArtifact(value, connectorId, upload);
    } else if (FILE_KINDS[connectorId] !== undefined) {
      inputs[name] = { kind: FILE_KINDS[connectorId], ref: fileUrl(value.text, what) };
    } else if (VALUE_KINDS[connectorId] !== undefined) {
      inputs[name] = { kind: VALUE_KINDS[connectorId], value: typedValue(value.text, connectorId, what) };
    } else {
      // A custom connector: the node checks the value, so it travels as JSON when it is JSON.
      inputs[name] = { value: parseLoosely(value.text) };
    }
  }
  return inputs;
}

/**
 * `svc node`'s inputs, typed by the NodeSpec's ports: value ports (TEXT, INT, FLOAT, BOOLEAN)
 * take bare scalars, data ports artifacts (STRUCTURED and EMBEDDING inline, files by ref). A
 * list port takes the option once per item.
 */
export async function nodeInputs(assignments: readonly Assignment[], spec: NodeSpec, upload: Uploader): Promise<Record<string, NodeInput>> {
  const grouped = new Map<string, InputValue[]>();
  for (const { name, value } of assignments) {
    const port = spec.inputs[name];
    if (!Object.hasOwn(spec.inputs, name) || port === undefined) {
      const ports = Object.entries(spec.inputs).map(([n, p]) => `${n} (${p.connector.id}${p.connector.isOptional ? ', optional' : ''})`);
      throw usageError(`node "${spec.id}" has no input "${name}"; its inputs: ${ports.join(', ') || 'none'}`, 'unknown_input');
    }
    if (grouped.has(name) && !port.connector.isArray) throw usageError(`input "${name}" is given twice (it takes one value)`);
    grouped.set(name, [...(grouped.get(name) ?? []), value]);
  }
  const inputs: Record<string, NodeInput> = {};
  for (const [name, values] of grouped) {
    const connector = spec.inputs[name]!.connector;
    const what = `input "${name}" (${connector.id}${connector.isArray ? ' list' : ''})`;
    const items = await Promise.all(values.map((value) => portValue(value, connector.id, what, upload)));
    if (!connector.isArray || items.length === 1) {
      inputs[name] = items[0]!;
      continue;
    }
    // A list reaches a value port only inside an inline artifact (the contract's bare values are scalars).
    if (FILE_KINDS[connector.id] !== undefined) throw usageError(`${what}: give one file; lists of files are not supported by svc node`);
    inputs[name] = { kind: VALUE_KINDS[connector.id] ?? 'structured', value: items.map((item) => unwrap(item)) };
  }
  return inputs;
}

async function portValue(value: InputValue, connectorId: string, what: string, upload: Uploader): Promise<NodeInput> {
  if (value.type !== 'plain') return refArtifact(value, connectorId, upload);
  if (FILE_KINDS[connectorId] !== undefined) return { kind: FILE_KINDS[connectorId], ref: fileUrl(value.text, what) };
  if (connectorId === 'STRUCTURED' || connectorId === 'EMBEDDING') return { kind: VALUE_KINDS[connectorId], value: jsonOf(value.text, what) };
  if (VALUE_KINDS[connectorId] !== undefined) return typedValue(value.text, connectorId, what) as NodeInput;
  const loose = parseLoosely(value.text);
  return loose !== null && typeof loose === 'object' ? { value: loose } : (loose as NodeInput);
}

const unwrap = (item: unknown): unknown => (item !== null && typeof item === 'object' && 'value' in item ? (item as { value: unknown }).value : item);

/** A file input given without `@`: an http(s) URL is still clearly a URL; anything else needs `@`. */
function fileUrl(text: string, what: string): string {
  if (/^https?:\/\//i.test(text)) return text;
  throw usageError(`${what} takes a file: give @<url> (@https://example.com/cat.png) or @<path> (@./cat.png)`, 'invalid_input');
}

/** A value no connector types (a custom one): JSON objects and lists parsed, then SPEC's scalar coercion. */
function parseLoosely(text: string): unknown {
  if (/^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return coerceScalar(text);
}
