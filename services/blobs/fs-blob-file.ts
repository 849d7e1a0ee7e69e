import fs from 'node:fs/promises';

/**
 * The file format of the filesystem driver: one header line, then the bytes.
 *
 *   svc-blob 1 {"key":"runs/r1/out.png","contentType":"image/png"}\n<bytes>
 *
 * Metadata and bytes in one file means one rename replaces both at once, so a reader never pairs
 * one blob's content type with another's bytes (a sidecar file would need two renames).
 */

const MAGIC = 'svc-blob 1 ';
// Keys are at most 512 characters and content types 255, so a header always fits.
const MAX_HEADER_BYTES = 4096;

/** The header line of a blob file. */
export function encodeHeader(key: string, contentType: string): Buffer {
  return Buffer.from(`${MAGIC}${JSON.stringify({ key, contentType })}\n`, 'utf8');
}

/** An open blob file: its metadata and where its bytes start. Close `handle` (or hand it to a stream that will). */
export interface OpenBlobFile {
  handle: fs.FileHandle;
  key: string;
  contentType: string;
  bodyStart: number;
  size: number;
}

/** Opens a blob file and reads its header; null when there is no such file. */
export async function openBlobFile(file: string): Promise<OpenBlobFile | null> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const [{ size: fileSize }, head] = await Promise.all([handle.stat(), handle.read(Buffer.alloc(MAX_HEADER_BYTES), 0, MAX_HEADER_BYTES, 0)]);
    const text = head.buffer.subarray(0, head.bytesRead).toString('latin1');
    const end = text.indexOf('\n');
    if (!text.startsWith(MAGIC) || end < 0) throw new Error(`${file} is not a blob file (no "${MAGIC.trim()}" header)`);
    const meta = JSON.parse(Buffer.from(text.slice(MAGIC.length, end), 'latin1').toString('utf8')) as { key: string; contentType: string };
    const bodyStart = end + 1;
    return { handle, key: meta.key, contentType: meta.contentType, bodyStart, size: fileSize - bodyStart };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
