import { InvalidBlobKeyError, InvalidContentTypeError } from './blob-errors';

const KEY_CHARS = /^[A-Za-z0-9._\-/]+$/;
/** Well under S3's 1024 bytes, leaving room for a bucket prefix. */
export const MAX_BLOB_KEY_LENGTH = 512;

/**
 * Checks a key and returns it: `/`-separated segments of letters, digits, `.`, `_` and `-`; no
 * empty, `.` or `..` segment (so no leading or trailing `/`); at most 512 characters. What passes
 * means the same object on a filesystem, on S3, and in a URL path without escaping.
 */
export function checkBlobKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidBlobKeyError(String(key ?? ''), 'it is empty');
  if (key.length > MAX_BLOB_KEY_LENGTH) throw new InvalidBlobKeyError(key, `it is ${key.length} characters long; the limit is ${MAX_BLOB_KEY_LENGTH}`);
  if (!KEY_CHARS.test(key)) throw new InvalidBlobKeyError(key, 'only letters, digits, ".", "_", "-" and "/" are allowed');
  if (key.startsWith('/')) throw new InvalidBlobKeyError(key, 'it must not start with "/"');
  for (const segment of key.split('/')) {
    if (segment === '') throw new InvalidBlobKeyError(key, 'it has an empty segment ("//" or a trailing "/")');
    if (segment === '.' || segment === '..') throw new InvalidBlobKeyError(key, `"${segment}" segments are not allowed`);
  }
  return key;
}

// RFC 9110 token characters for type and subtype; parameters printable, no CR/LF (header-safe).
const CONTENT_TYPE = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+\/[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*;[\x20-\x7e]*)?$/;

/** Checks a content type and returns it: `type/subtype` with optional parameters, at most 255 characters. */
export function checkContentType(contentType: string): string {
  if (typeof contentType !== 'string' || contentType.length > 255 || !CONTENT_TYPE.test(contentType)) {
    throw new InvalidContentTypeError(String(contentType ?? ''));
  }
  return contentType;
}
