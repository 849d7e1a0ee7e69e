import path from 'node:path';
import type { ArtifactKind } from '../../sdk/src/index';
import { usageError } from './cli-error';

/** One `-i name=value` of the command line, its value classified. */
export interface Assignment {
  name: string;
  value: InputValue;
}

/**
 * `@https://…` is a URL the service fetches, any other `@…` a local file to upload first, and
 * everything else a plain value; `@@…` is the plain text `@…` (a way to pass a leading `@`).
 */
export type InputValue = { type: 'url'; url: string } | { type: 'file'; path: string } | { type: 'plain'; text: string };

/** commander's collector of a repeatable option. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Splits each `name=value` at its first `=`; the value may itself contain `=`. */
export function parseAssignments(pairs: readonly string[]): Assignment[] {
  return pairs.map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw usageError(`--input "${pair}" must be name=value (e.g. -i prompt="a red fox" or -i photo=@./cat.png)`);
    return { name: pair.slice(0, at), value: classify(pair.slice(at + 1)) };
  });
}

function classify(text: string): InputValue {
  if (text.startsWith('@@')) return { type: 'plain', text: text.slice(1) };
  if (!text.startsWith('@')) return { type: 'plain', text };
  const rest = text.slice(1);
  if (/^https?:\/\//i.test(rest)) return { type: 'url', url: rest };
  if (rest === '') throw usageError('"@" must be followed by a URL (@https://…) or a file path (@./photo.png)');
  return { type: 'file', path: rest };
}

const KIND_BY_EXTENSION: Record<string, ArtifactKind> = {
  '.png': 'image', '.jpg': 'image', '.jpeg': 'image', '.webp': 'image', '.gif': 'image',
  '.mp3': 'audio', '.wav': 'audio', '.ogg': 'audio', '.flac': 'audio',
  '.mp4': 'video', '.webm': 'video', '.mov': 'video',
  '.txt': 'text', '.md': 'text',
  '.json': 'structured',
};

/** The artifact kind a URL's file extension suggests (`file` when it suggests nothing); the query and fragment are ignored. */
export function kindOfUrl(url: string): ArtifactKind {
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    throw usageError(`"${url}" is not a valid URL`);
  }
  return KIND_BY_EXTENSION[path.posix.extname(pathname).toLowerCase()] ?? 'file';
}

const NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** A plain value as a scalar: numbers and `true`/`false` coerced, anything else the text itself. */
export function coerceScalar(text: string): string | number | boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (NUMBER.test(text)) {
    const number = Number(text);
    if (Number.isFinite(number)) return number;
  }
  return text;
}

/** A plain value as a number, or an error naming the input and its type. */
export function numberOf(text: string, what: string, whole: boolean): number {
  const number = NUMBER.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isFinite(number) || (whole && !Number.isSafeInteger(number))) {
    throw usageError(`${what} takes ${whole ? 'a whole number' : 'a number'}, got "${text}"`, 'invalid_input');
  }
  return number;
}

export function booleanOf(text: string, what: string): boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw usageError(`${what} takes true or false, got "${text}"`, 'invalid_input');
}

export function jsonOf(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw usageError(`${what} takes JSON (e.g. '{"name":"Ada"}'), got "${text}"`, 'invalid_input');
  }
}
