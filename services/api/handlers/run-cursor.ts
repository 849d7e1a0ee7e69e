import type { RunListKey as RunListPosition } from '../../store';

/**
 * The `nextCursor` of `GET /v1/runs`: base64url of `<createdAt ISO>|<id>`, the position of the
 * last run of a page. Opaque to callers; it carries nothing they could not read from the page.
 */

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The cursor of a listing position. */
export function encodeRunCursor(position: RunListPosition): string {
  return Buffer.from(`${position.createdAt.toISOString()}|${position.id.toLowerCase()}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or null when the text is not a cursor this service made. */
export function decodeRunCursor(cursor: string): RunListPosition | null {
  if (!BASE64URL.test(cursor) || cursor.length > 200) return null;
  const [time, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (rest.length > 0 || time === undefined || id === undefined || !ISO_MS.test(time) || !UUID.test(id)) return null;
  const createdAt = new Date(time);
  // Rejects dates that parse but do not exist (2024-02-30 rolls over to March).
  if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== time) return null;
  return { createdAt, id };
}
