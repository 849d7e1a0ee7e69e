import type { ByteRange } from '../../blobs';

/** What a `Range` header asks of a representation of `size` bytes (RFC 9110, 14.2). */
export type RangeRequest =
  /** Serve the whole body, 200: no header, another unit, a malformed or a multi-range header. */
  | { kind: 'whole' }
  | { kind: 'partial'; range: ByteRange }
  /** 416 with `Content-Range: bytes *\/size`: no byte of the representation is asked for. */
  | { kind: 'unsatisfiable' };

const SPEC = /^bytes=(\d*)-(\d*)$/;

/**
 * Reads a single byte range; several ranges are answered with the whole body, which the RFC
 * allows and which spares multipart responses no client of blobs needs.
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  const match = header === undefined ? null : SPEC.exec(header.replace(/\s+/g, ''));
  if (!match) return { kind: 'whole' };
  const [, first, last] = match;
  if (first === '') {
    // `bytes=-N`: the last N bytes (all of them when the blob is shorter).
    if (last === '') return { kind: 'whole' };
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, size - suffix), end: size - 1 } };
  }
  const start = Number(first);
  const end = last === '' ? Infinity : Number(last);
  // `bytes=4-2` is not a valid range (ignored), unlike one that starts past the end.
  if (!Number.isSafeInteger(start) || end < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start, end: Math.min(end, size - 1) } };
}
