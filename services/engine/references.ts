/**
 * Value references: a node input whose whole string value is `${<nodeId>.<port>}`. A reference
 * inside a longer string or inside a nested object/array is plain data, never resolved.
 */
export interface Reference {
  nodeId: string;
  port: string;
}

/** Ids usable in references: a letter or `_`, then letters, digits, `_` or `-`. */
export const NODE_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]{0,199}$/;
const REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_-]*)\}$/;

/** The reference a value makes, or null when it is a literal. */
export function parseReference(value: unknown): Reference | null {
  // Cheap rejection first: most inputs are literals, and this runs for every input of every node.
  if (typeof value !== 'string' || value.charCodeAt(0) !== 36 /* $ */) return null;
  const m = REFERENCE.exec(value);
  return m ? { nodeId: m[1]!, port: m[2]! } : null;
}

/** Whether a string looks like it meant to be a reference but is not a valid one. */
export function looksLikeBrokenReference(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith('${') && value.endsWith('}') && parseReference(value) === null;
}

export function formatReference(ref: Reference): string {
  return `\${${ref.nodeId}.${ref.port}}`;
}
