import type { Readable } from 'node:stream';
import { BlobSizeMismatchError } from './blob-errors';

/**
 * Cuts a stream into parts of exactly `partSize` bytes (the last one shorter, or empty for an
 * empty stream), holding at most one part in memory. Checks the total against the announced size:
 * too long fails as soon as it shows, too short at the end, before the last part is yielded.
 */
export async function* byteParts(key: string, body: Readable, partSize: number, announced: number | undefined): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let total = 0;
  for await (const chunk of body) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    total += bytes.length;
    if (announced !== undefined && total > announced) throw new BlobSizeMismatchError(key, announced, total);
    pending.push(bytes);
    pendingBytes += bytes.length;
    while (pendingBytes >= partSize) {
      const joined = Buffer.concat(pending);
      yield joined.subarray(0, partSize);
      pending = [joined.subarray(partSize)];
      pendingBytes = joined.length - partSize;
    }
  }
  if (announced !== undefined && total !== announced) throw new BlobSizeMismatchError(key, announced, total);
  if (pendingBytes > 0 || total === 0) yield Buffer.concat(pending);
}
