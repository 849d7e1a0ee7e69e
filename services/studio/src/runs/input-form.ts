import type { ArtifactInput, BuiltinConnectorId, Workflow } from '../../../contract';

/** Which control a workflow input gets in the run form. */
export type Widget = 'text' | 'textarea' | 'integer' | 'number' | 'switch' | 'json' | 'file';

/** One field of the run form, derived from an input node of the definition. */
export interface FormField {
  /** The input node's id: the key of `inputs` in the run request. */
  id: string;
  /** What people read: the node's label, or its id. */
  label: string;
  connector: BuiltinConnectorId;
  widget: Widget;
  /** Required when the node has no default (the engine's rule). */
  required: boolean;
  hasDefault: boolean;
  default?: unknown;
}

/** The value a field holds while being edited. */
export type FieldValue =
  | { widget: 'text' | 'textarea' | 'integer' | 'number' | 'json'; text: string }
  | { widget: 'switch'; checked: boolean }
  | { widget: 'file'; mode: 'upload' | 'url'; url: string; artifact: ArtifactInput | null; fileName: string | null };

const FILE_CONNECTORS: readonly string[] = ['IMAGE', 'AUDIO', 'VIDEO', 'FILE'];

function connectorOf(node: Workflow['nodes'][number]): BuiltinConnectorId {
  if (node.outputType) return node.outputType;
  // The engine requires outputType on input nodes; a draft may not have it yet: read the default.
  const value = node.inputs?.default;
  if (typeof value === 'boolean') return 'BOOLEAN';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? 'INT' : 'FLOAT';
  if (typeof value === 'string') return 'TEXT';
  if (value && typeof value === 'object' && ('ref' in value || 'kind' in value)) {
    const kind = (value as { kind?: string }).kind;
    if (kind) return kind.toUpperCase() as BuiltinConnectorId;
    return 'FILE';
  }
  return value === undefined ? 'TEXT' : 'STRUCTURED';
}

function widgetOf(connector: BuiltinConnectorId, def: unknown): Widget {
  if (FILE_CONNECTORS.includes(connector)) return 'file';
  switch (connector) {
    case 'INT': return 'integer';
    case 'FLOAT': return 'number';
    case 'BOOLEAN': return 'switch';
    case 'STRUCTURED':
    case 'EMBEDDING': return 'json';
    default: return typeof def === 'string' && (def.length > 60 || def.includes('\n')) ? 'textarea' : 'text';
  }
}

/** The run form's fields: one per input node, in the definition's order. */
export function deriveFields(definition: Workflow): FormField[] {
  const fields: FormField[] = [];
  for (const node of definition.nodes) {
    if (node.uses !== 'input') continue;
    const hasDefault = node.inputs !== undefined && Object.hasOwn(node.inputs, 'default');
    const def = hasDefault ? node.inputs!.default : undefined;
    const connector = connectorOf(node);
    fields.push({
      id: node.id,
      label: node.label?.trim() || node.id,
      connector,
      widget: widgetOf(connector, def),
      required: !hasDefault,
      hasDefault,
      ...(hasDefault ? { default: def } : {}),
    });
  }
  return fields;
}

/** A field's starting value: its default filled in. */
export function initialValue(field: FormField): FieldValue {
  const def = field.default;
  switch (field.widget) {
    case 'switch':
      return { widget: 'switch', checked: def === true };
    case 'file': {
      const ref = def && typeof def === 'object' && typeof (def as { ref?: unknown }).ref === 'string' ? (def as { ref: string }).ref : '';
      return { widget: 'file', mode: ref ? 'url' : 'upload', url: ref, artifact: null, fileName: null };
    }
    case 'json':
      return { widget: 'json', text: def === undefined ? '' : JSON.stringify(def, null, 2) };
    default:
      return { widget: field.widget, text: def === undefined || def === null ? '' : String(def) };
  }
}

export function initialValues(fields: readonly FormField[]): Record<string, FieldValue> {
  return Object.fromEntries(fields.map((f) => [f.id, initialValue(f)]));
}

/** The run request's `inputs` from the form, or the problems to show beside the fields. */
export function buildInputs(
  fields: readonly FormField[],
  values: Readonly<Record<string, FieldValue>>,
): { ok: true; inputs: Record<string, ArtifactInput> } | { ok: false; errors: Record<string, string> } {
  const inputs: Record<string, ArtifactInput> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const value = values[field.id] ?? initialValue(field);
    const kind = field.connector.toLowerCase() as ArtifactInput['kind'];
    if (value.widget === 'switch') {
      inputs[field.id] = { kind, value: value.checked };
      continue;
    }
    if (value.widget === 'file') {
      if (value.mode === 'upload' && value.artifact) inputs[field.id] = value.artifact;
      else if (value.mode === 'url' && value.url.trim()) {
        const url = value.url.trim();
        if (!/^https?:\/\//i.test(url)) errors[field.id] = 'Give an http(s) URL.';
        else inputs[field.id] = { kind, ref: url };
      } else if (field.required) errors[field.id] = value.mode === 'upload' ? 'Choose a file.' : 'Give a URL.';
      continue;
    }
    const text = value.text;
    if (text.trim() === '') {
      // Left empty: the input's default applies; without one the input is required.
      if (field.required) errors[field.id] = 'Required.';
      continue;
    }
    if (value.widget === 'integer') {
      const n = Number(text);
      if (!Number.isSafeInteger(n)) errors[field.id] = 'Give a whole number.';
      else inputs[field.id] = { kind, value: n };
    } else if (value.widget === 'number') {
      const n = Number(text);
      if (!Number.isFinite(n)) errors[field.id] = 'Give a number.';
      else inputs[field.id] = { kind, value: n };
    } else if (value.widget === 'json') {
      try {
        inputs[field.id] = { kind, value: JSON.parse(text) as unknown };
      } catch (err) {
        errors[field.id] = `Not valid JSON: ${(err as Error).message}`;
      }
    } else {
      inputs[field.id] = { kind, value: text };
    }
  }
  return Object.keys(errors).length ? { ok: false, errors } : { ok: true, inputs };
}

/** Maps a 400's issues (paths like `inputs.prompt` or messages naming an input) to the fields. */
export function issuesByField(fields: readonly FormField[], issues: readonly { path: string; message: string }[]): { byField: Record<string, string[]>; other: string[] } {
  const byField: Record<string, string[]> = {};
  const other: string[] = [];
  for (const issue of issues) {
    // A value problem found where a run input reaches a port names it: `(from run input "speed")`.
    const named = /\brun input "([^"]+)"/.exec(issue.message)?.[1];
    const field = fields.find(
      (f) => issue.path === `inputs.${f.id}` || issue.path.startsWith(`inputs.${f.id}.`) || issue.path.startsWith(`inputs.${f.id}[`) || named === f.id,
    );
    if (field) (byField[field.id] ??= []).push(issue.message);
    else other.push(issue.path && issue.path !== 'request' ? `${issue.path}: ${issue.message}` : issue.message);
  }
  return { byField, other };
}
