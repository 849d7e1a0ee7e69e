/** A published version number: MAJOR.MINOR.PATCH, no prerelease or build tags. */
export interface Semver {
  major: number;
  minor: number;
  patch: number;
}

/** How a caller picks a version: the latest pointer, an exact version, or a major line. */
export type Selector = { kind: 'latest' } | { kind: 'exact'; version: Semver } | { kind: 'major'; major: number };

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const PART = '(0|[1-9]\\d{0,8})';
const FULL = new RegExp(`^${PART}\\.${PART}\\.${PART}$`);
const MAJOR = new RegExp(`^${PART}$`);
const PARTIAL = new RegExp(`^${PART}\\.${PART}$`);

/** Parses MAJOR.MINOR.PATCH (numbers without leading zeros). */
export function parseSemver(text: string): Parsed<Semver> {
  const m = FULL.exec(text);
  if (!m) {
    return { ok: false, message: `"${text}" is not a version of the form MAJOR.MINOR.PATCH (for example 1.4.0; no prerelease or build tags)` };
  }
  return { ok: true, value: { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) } };
}

export function formatSemver(v: Semver): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

/** Orders versions: negative when a < b. */
export function compareSemver(a: Semver, b: Semver): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** Parses a selector: `latest`, a full semver, or a bare major; `2.5` is rejected as ambiguous. */
export function parseSelector(text: string): Parsed<Selector> {
  if (text === 'latest') return { ok: true, value: { kind: 'latest' } };
  if (MAJOR.test(text)) return { ok: true, value: { kind: 'major', major: Number(text) } };
  if (PARTIAL.test(text)) {
    return { ok: false, message: `version selector "${text}" is ambiguous: give a full version (${text}.0) or a bare major (${text.split('.')[0]})` };
  }
  const full = parseSemver(text);
  if (full.ok) return { ok: true, value: { kind: 'exact', version: full.value } };
  return { ok: false, message: `version selector "${text}" is not valid: use "latest", a full version such as 1.2.0, or a bare major such as 1` };
}

export function formatSelector(selector: Selector): string {
  switch (selector.kind) {
    case 'latest':
      return 'latest';
    case 'exact':
      return formatSemver(selector.version);
    case 'major':
      return String(selector.major);
  }
}

/** The next version after the highest ever published, by the publisher's choice of bump. */
export function bumpSemver(highest: Semver | null, bump: 'major' | 'minor' | 'patch'): Semver {
  if (!highest) return { major: 1, minor: 0, patch: 0 };
  switch (bump) {
    case 'major':
      return { major: highest.major + 1, minor: 0, patch: 0 };
    case 'minor':
      return { major: highest.major, minor: highest.minor + 1, patch: 0 };
    case 'patch':
      return { major: highest.major, minor: highest.minor, patch: highest.patch + 1 };
  }
}
