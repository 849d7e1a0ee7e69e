import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobNotFoundError, checkBlobKey, type BlobInfo, type BlobObject, type BlobStore, type PutOptions } from './blob-store';

const META_SUFFIX = '.meta.json';

/**
 * Blobs as files under a root directory; the content type lives in a sidecar JSON file. Writes go
 * to a temporary file first and are renamed into place, so a reader never sees half a blob.
 * Suited to one host (`make run`); use the S3 driver when processes run on several hosts.
 */
export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private pathOf(key: string): string {
    return path.join(this.root, 'objects', checkBlobKey(key));
  }

  async put(key: string, body: Buffer | Readable, options: PutOptions): Promise<BlobInfo> {
    const target = this.pathOf(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const tmp = path.join(path.dirname(target), `.tmp-${randomUUID()}`);
    try {
      await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, createWriteStream(tmp, { flags: 'wx' }));
      const { size } = await fs.stat(tmp);
      await fs.writeFile(tmp + META_SUFFIX, JSON.stringify({ contentType: options.contentType }));
      await fs.rename(tmp + META_SUFFIX, target + META_SUFFIX);
      await fs.rename(tmp, target);
      return { key, size, contentType: options.contentType };
    } catch (err) {
      await fs.rm(tmp, { force: true });
      await fs.rm(tmp + META_SUFFIX, { force: true });
      throw err;
    }
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const file = this.pathOf(key);
    try {
      const [stats, meta] = await Promise.all([fs.stat(file), fs.readFile(file + META_SUFFIX, 'utf8')]);
      return { key, size: stats.size, contentType: (JSON.parse(meta) as { contentType: string }).contentType };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async get(key: string): Promise<BlobObject> {
    const info = await this.stat(key);
    if (!info) throw new BlobNotFoundError(key);
    return { ...info, body: createReadStream(this.pathOf(key)) };
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    await fs.rm(file, { force: true });
    await fs.rm(file + META_SUFFIX, { force: true });
  }

  async presignGet(): Promise<string | null> {
    return null;
  }
}
