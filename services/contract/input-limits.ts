/**
 * Limits every input value is held to before its schema is checked, whatever its schema says:
 * values the schema leaves open (node inputs are any JSON) still end up in Postgres, in logs and
 * in `JSON.stringify`, which has limits of its own. See docs/decisions.md, "Input limits".
 */

/** Most entries of a map the contract takes (node inputs, run inputs, artifact metadata). */
export const MAX_MAP_ENTRIES = 256;

/** Deepest nesting of arrays and objects accepted; the request object itself is level 1. */
export const MAX_INPUT_DEPTH = 64;

/**
 * Above this many values (every object, array and scalar counted once), a failed validation
 * reports only its first problem: listing them all costs ajv time in proportion to the count.
 */
export const ALL_ERRORS_VALUE_BUDGET = 20_000;

/** What the walk found: a problem with where it is, and how many values the input holds. */
export interface InputScan {
  problem: { path: string; message: string } | null;
  values: number;
}

/** U+0000 or a UTF-16 surrogate without its pair: Postgres stores neither in text or jsonb. */
// eslint-disable-next-line no-control-regex -- finding U+0000 is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function textProblem(text: string): string | null {
  const found = UNSTORABLE.exec(text);
  if (!found) return null;
  return found[0] === '\u0000'
    ? 'contains the character U+0000 (NUL), which cannot be stored; remove it'
    : `contains an unpaired UTF-16 surrogate (U+${found[0].charCodeAt(0).toString(16).toUpperCase()}) at index ${found.index}, which is not valid Unicode; send well-formed text`;
}

/** One value on the walk's stack; its path is only spelled out when it has a problem. */
interface Visit {
  value: unknown;
  parent: Visit | null;
  key: string | number | null;
  depth: number;
}

function pathOf(visit: Visit): string {
  const keys: (string | number)[] = [];
  for (let at: Visit | null = visit; at && at.key !== null; at = at.parent) keys.push(at.key);
  let out = '';
  for (const key of keys.reverse()) out += typeof key === 'number' ? `[${key}]` : out === '' ? key : `.${key}`;
  return out === '' ? 'request' : out;
}

/**
 * Walks a value without recursion (so no depth can overflow the stack) and returns the first
 * problem no schema could express: nesting deeper than `MAX_INPUT_DEPTH`, or a string or field
 * name that cannot be stored. Paths are written like the validator's (`inputs.text`, `nodes[2]`).
 */
export function scanInput(value: unknown): InputScan {
  const stack: Visit[] = [{ value, parent: null, key: null, depth: 1 }];
  let values = 0;
  const found = (visit: Visit, message: (path: string) => string): InputScan => {
    const path = pathOf(visit);
    return { problem: { path, message: message(path) }, values };
  };
  while (stack.length > 0) {
    const visit = stack.pop()!;
    values += 1;
    if (typeof visit.value === 'string') {
      const problem = textProblem(visit.value);
      if (problem) return found(visit, (path) => `${path} ${problem}`);
      continue;
    }
    if (typeof visit.value !== 'object' || visit.value === null) continue;
    if (visit.depth > MAX_INPUT_DEPTH) {
      return found(visit, (path) => `${path} is nested more than ${MAX_INPUT_DEPTH} levels deep (arrays and objects); flatten it`);
    }
    // Children are pushed last-first so that problems are found in document order.
    if (Array.isArray(visit.value)) {
      for (let i = visit.value.length - 1; i >= 0; i -= 1) stack.push({ value: visit.value[i], parent: visit, key: i, depth: visit.depth + 1 });
      continue;
    }
    const entries = Object.entries(visit.value);
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [key, child] = entries[i]!;
      const problem = textProblem(key);
      if (problem) return found(visit, (path) => `a field name in ${path} ${problem}`);
      stack.push({ value: child, parent: visit, key, depth: visit.depth + 1 });
    }
  }
  return { problem: null, values };
}
