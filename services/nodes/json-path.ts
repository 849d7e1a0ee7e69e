/**
 * Paths into JSON values, written `a.b[0].c`: keys separated by dots, list indexes in brackets
 * (negative ones count from the end: `[-1]` is the last item), and keys containing dots,
 * brackets or quotes as JSON strings in brackets: `a["x.y"]`. The empty path is the value itself.
 */
export type PathSegment = string | number;

export type ParsedPath = { ok: true; segments: PathSegment[] } | { ok: false; message: string };

export type PathLookup = { found: true; value: unknown } | { found: false; message: string };

/** Longest path accepted; paths are written by people, not generated. */
export const MAX_PATH_LENGTH = 1000;

const KEY = /^[^.[\]"]+/;
const INDEX = /^\[(-?\d+)\]/;
const QUOTED = /^\[("(?:[^"\\]|\\.)*")\]/;

/** Parses a path; the failure message says where it breaks. */
export function parseJsonPath(path: string): ParsedPath {
  if (path.length > MAX_PATH_LENGTH) return { ok: false, message: `is longer than ${MAX_PATH_LENGTH} characters` };
  const segments: PathSegment[] = [];
  let rest = path.trim();
  let first = true;
  while (rest.length > 0) {
    let match: RegExpExecArray | null;
    if ((match = INDEX.exec(rest))) {
      const index = Number(match[1]);
      if (!Number.isSafeInteger(index)) return { ok: false, message: `has an index out of range: ${match[0]}` };
      segments.push(index);
    } else if ((match = QUOTED.exec(rest))) {
      try {
        segments.push(JSON.parse(match[1]!) as string);
      } catch {
        return { ok: false, message: `has a quoted key that is not a valid JSON string: ${match[1]}` };
      }
    } else {
      // A key comes first or after a dot.
      const dotted = !first && rest.startsWith('.');
      const body = dotted ? rest.slice(1) : rest;
      if (!first && !dotted) return { ok: false, message: `is not a path like a.b[0].c: unexpected "${rest.slice(0, 10)}"` };
      match = KEY.exec(body);
      if (!match) return { ok: false, message: `is not a path like a.b[0].c: expected a key at "${body.slice(0, 10)}"` };
      segments.push(match[0]);
      rest = body.slice(match[0].length);
      first = false;
      continue;
    }
    rest = rest.slice(match[0].length);
    first = false;
  }
  return { ok: true, segments };
}

/** Writes segments back in the path notation (for messages). */
export function formatJsonPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (KEY.exec(segment)?.[0] === segment) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `a list of ${value.length} items`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Follows a path through a JSON value. Only own keys count, so `constructor` or `__proto__`
 * never reach into JavaScript internals. A miss names the deepest part of the path that exists.
 */
export function lookupJsonPath(data: unknown, segments: readonly PathSegment[]): PathLookup {
  let current = data;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const where = i === 0 ? 'the value' : `"${formatJsonPath(segments.slice(0, i))}"`;
    if (typeof segment === 'number') {
      if (!Array.isArray(current)) return { found: false, message: `${where} is ${describeType(current)}, not a list` };
      const index = segment < 0 ? current.length + segment : segment;
      if (index < 0 || index >= current.length) return { found: false, message: `${where} has no item [${segment}] (it is ${describeType(current)})` };
      current = current[index];
    } else {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) {
        return { found: false, message: `${where} is ${describeType(current)}, not an object` };
      }
      if (!Object.hasOwn(current, segment)) return { found: false, message: `${where} has no key ${JSON.stringify(segment)}` };
      current = (current as Record<string, unknown>)[segment];
    }
  }
  return { found: true, value: current };
}
