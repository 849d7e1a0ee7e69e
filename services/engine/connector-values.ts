import { validate, ArtifactInputSchema, type ArtifactKind, type Connector, type ConnectorId } from '../contract';

/** Connectors whose values are files or media: they travel as artifacts. */
const DATA_CONNECTORS: Partial<Record<ConnectorId, ArtifactKind>> = {
  IMAGE: 'image',
  AUDIO: 'audio',
  VIDEO: 'video',
  FILE: 'file',
};

/** The artifact kind that carries a connector's values. */
export function artifactKindOf(id: ConnectorId): ArtifactKind | null {
  if (id.startsWith('CUSTOM:')) return null;
  if (isDataConnector(id)) return DATA_CONNECTORS[id]!;
  return id.toLowerCase() as ArtifactKind;
}

export function isDataConnector(id: ConnectorId): boolean {
  return Object.hasOwn(DATA_CONNECTORS, id);
}

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function checkOne(id: ConnectorId, value: unknown): string | null {
  if (id.startsWith('CUSTOM:')) return null;
  switch (id) {
    case 'TEXT':
      return typeof value === 'string' ? null : `must be TEXT (a string), got ${describe(value)}`;
    case 'INT':
      return Number.isSafeInteger(value) ? null : `must be an INT (a whole number), got ${describe(value)}`;
    case 'FLOAT':
      return typeof value === 'number' && Number.isFinite(value) ? null : `must be a FLOAT (a number), got ${describe(value)}`;
    case 'BOOLEAN':
      return typeof value === 'boolean' ? null : `must be a BOOLEAN, got ${describe(value)}`;
    case 'EMBEDDING':
      return Array.isArray(value) && value.every((n) => typeof n === 'number' && Number.isFinite(n))
        ? null
        : `must be an EMBEDDING (an array of numbers), got ${describe(value)}`;
    case 'STRUCTURED':
      return value === undefined ? 'must be a JSON value' : null;
    default: {
      // Media and files: an artifact envelope with a ref (or an inline value).
      const checked = validate(ArtifactInputSchema, value);
      if (!checked.ok) return `must be an artifact ({ "kind": "${artifactKindOf(id)}", "ref": "<url>" }): ${checked.message}`;
      const kind = (value as { kind?: string }).kind;
      if (kind !== undefined && kind !== artifactKindOf(id)) return `must be an ${id} artifact, got kind "${kind}"`;
      return null;
    }
  }
}

function range(connector: Connector): string {
  const { minValue, maxValue } = connector;
  if (minValue !== undefined && maxValue !== undefined) return ` between ${minValue} and ${maxValue}`;
  if (minValue !== undefined) return ` of at least ${minValue}`;
  if (maxValue !== undefined) return ` of at most ${maxValue}`;
  return '';
}

function checkConstraints(connector: Connector, value: unknown): string | null {
  if (connector.optionValues && !connector.optionValues.some((option) => JSON.stringify(option) === JSON.stringify(value))) {
    return `must be one of ${connector.optionValues.map(describe).join(', ')}, got ${describe(value)}`;
  }
  if (typeof value === 'string' && connector.maxLength !== undefined && value.length > connector.maxLength) {
    return `must be a TEXT of at most ${connector.maxLength} characters, got ${value.length}`;
  }
  if (typeof value === 'number') {
    if ((connector.minValue !== undefined && value < connector.minValue) || (connector.maxValue !== undefined && value > connector.maxValue)) {
      return `must be ${connector.id === 'INT' ? 'an INT' : `a ${connector.id}`}${range(connector)}, got ${value}`;
    }
  }
  return null;
}

/**
 * Checks a literal value against a connector: its type (per element when `isArray`), its
 * `optionValues` and its bounds. Returns the problem, or null when the value fits.
 */
export function checkLiteral(connector: Connector, value: unknown): string | null {
  if (connector.isArray) {
    if (!Array.isArray(value)) return `must be a list of ${connector.id}, got ${describe(value)}`;
    for (let i = 0; i < value.length; i++) {
      const problem = checkOne(connector.id, value[i]) ?? checkConstraints(connector, value[i]);
      if (problem) return `item ${i} ${problem}`;
    }
    return null;
  }
  return checkOne(connector.id, value) ?? checkConstraints(connector, value);
}

/**
 * Whether values of `source` may flow into a port of `target`. Besides equal connectors:
 * INT into FLOAT (widening), INT/FLOAT/BOOLEAN into TEXT (their JSON text), STRUCTURED into
 * any scalar (checked when the value arrives), a single value into a list (wrapped).
 * See docs/connectors.md.
 */
export function connectorsCompatible(source: Connector, target: Connector): boolean {
  if (source.isArray && !target.isArray) return false;
  const s = source.id;
  const t = target.id;
  if (s === t) return true;
  if (s.startsWith('CUSTOM:') || t.startsWith('CUSTOM:')) return false;
  if (s === 'INT' && t === 'FLOAT') return true;
  if (t === 'TEXT' && (s === 'INT' || s === 'FLOAT' || s === 'BOOLEAN')) return true;
  if (s === 'STRUCTURED' && ['TEXT', 'INT', 'FLOAT', 'BOOLEAN', 'EMBEDDING'].includes(t)) return true;
  return false;
}

function coerceOne(value: unknown, target: Connector['id']): unknown {
  if (target === 'TEXT' && (typeof value === 'number' || typeof value === 'boolean')) return JSON.stringify(value);
  return value;
}

/**
 * Applies the coercions docs/connectors.md allows on the way into a port: INT/FLOAT/BOOLEAN into
 * TEXT become their JSON text, a single value into a list port becomes a one-item list. Anything
 * else passes unchanged and is checked by the node against its connector (a STRUCTURED value of
 * the wrong type fails the step there).
 */
export function coerceToConnector(value: unknown, target: Connector): unknown {
  if (target.isArray) {
    const list = Array.isArray(value) ? value : [value];
    return list.map((item) => coerceOne(item, target.id));
  }
  return coerceOne(value, target.id);
}
