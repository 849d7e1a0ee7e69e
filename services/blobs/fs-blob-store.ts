import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { BlobNotFoundError, BlobSizeMismatchError } from './blob-errors';
import { checkBlobKey, checkContentType } from './blob-key';
import type { BlobInfo, BlobObject, BlobStore, ByteRange, PutOptions } from './blob-store';
import { encodeHeader, openBlobFile } from './fs-blob-file';

// A crash between creating a temporary file and renaming it leaves the file behind; `init`
// removes those older than this (no put takes that long).
const STALE_TMP_MS = 60 * 60_000;

/**
 * Blobs as files under a root directory (the embedded default, for one host). A blob is one
 * file named by the SHA-256 of its key, under `objects/<2 hex>/`, holding a header line with
 * its key and content type, then its bytes (fs-blob-file.ts). Hashed names keep keys such as
 * `a` and `a/b`, which S3 allows side by side, from colliding as file and directory. Writes go
 * to `tmp/`, are synced, and are renamed into place: a reader sees the old blob or the new one.
 */
export class FsBlobStore implements BlobStore {
  private readonly objects: string;
  private readonly tmp: string;

  constructor(readonly root: string) {
    this.objects = path.join(root, 'objects');
    this.tmp = path.join(root, 'tmp');
  }

  /** Creates the directories and removes temporary files a crashed process left behind. Optional. */
  async init(): Promise<void> {
    await fs.mkdir(this.objects, { recursive: true });
    await fs.mkdir(this.tmp, { recursive: true });
    const now = Date.now();
    for (const name of await fs.readdir(this.tmp)) {
      const file = path.join(this.tmp, name);
      const stats = await fs.stat(file).catch(() => null);
      if (stats && now - stats.mtimeMs > STALE_TMP_MS) await fs.rm(file, { force: true });
    }
  }

  private fileOf(key: string): string {
    const hash = createHash('sha256').update(checkBlobKey(key)).digest('hex');
    return path.join(this.objects, hash.slice(0, 2), hash);
  }

  async put(key: string, body: Buffer | Readable, options: PutOptions): Promise<BlobInfo> {
    const target = this.fileOf(key);
    const contentType = checkContentType(options.contentType);
    await Promise.all([fs.mkdir(path.dirname(target), { recursive: true }), fs.mkdir(this.tmp, { recursive: true })]);
    const tmp = path.join(this.tmp, randomUUID());
    const handle = await fs.open(tmp, 'wx', 0o644);
    let open = true;
    try {
      await handle.write(encodeHeader(key, contentType));
      let size = 0;
      for await (const chunk of Buffer.isBuffer(body) ? [body] : body) {
        const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
        size += bytes.length;
        await handle.write(bytes);
      }
      if (options.size !== undefined && size !== options.size) throw new BlobSizeMismatchError(key, options.size, size);
      await handle.sync();
      await handle.close();
      open = false;
      await fs.rename(tmp, target);
      return { key, size, contentType };
    } catch (err) {
      if (open) await handle.close().catch(() => undefined);
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject> {
    const file = await openBlobFile(this.fileOf(key));
    if (!file) throw new BlobNotFoundError(key);
    if (range && range.start >= file.size) {
      await file.handle.close();
      throw new RangeError(`bytes from ${range.start} are past the end of blob ${key} (${file.size} bytes)`);
    }
    // The stream reads through the open handle, so a concurrent overwrite or delete (a rename or
    // unlink of the name) cannot change the bytes under it; it closes the handle when done.
    const body = file.handle.createReadStream({
      start: file.bodyStart + (range?.start ?? 0),
      ...(range ? { end: file.bodyStart + Math.min(range.end, file.size - 1) } : {}),
    });
    return { key, size: file.size, contentType: file.contentType, body };
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const file = await openBlobFile(this.fileOf(key));
    if (!file) return null;
    await file.handle.close();
    return { key, size: file.size, contentType: file.contentType };
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.fileOf(key), { force: true });
  }

  async presignGet(key: string): Promise<string | null> {
    checkBlobKey(key);
    return null;
  }
}
