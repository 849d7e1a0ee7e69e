import type { Readable } from 'node:stream';
import { Client, S3Error } from 'minio';
import { BlobNotFoundError, checkBlobKey, type BlobInfo, type BlobObject, type BlobStore, type PutOptions } from './blob-store';

export interface S3BlobStoreOptions {
  /** Endpoint URL, e.g. `http://127.0.0.1:9000` or `https://s3.eu-west-1.amazonaws.com`. */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

function isNotFound(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return err instanceof S3Error ? code === 'NoSuchKey' || code === 'NotFound' : code === 'NotFound' || code === 'NoSuchKey';
}

/** Blobs in an S3-compatible bucket through the `minio` client (MinIO, AWS S3, Ceph RGW). */
export class S3BlobStore implements BlobStore {
  private readonly client: Client;

  constructor(private readonly options: S3BlobStoreOptions) {
    const url = new URL(options.endpoint);
    const useSSL = url.protocol === 'https:';
    this.client = new Client({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : useSSL ? 443 : 80,
      useSSL,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region,
      pathStyle: true,
    });
  }

  /** Creates the bucket when it does not exist yet. */
  async init(): Promise<void> {
    if (!(await this.client.bucketExists(this.options.bucket))) {
      await this.client.makeBucket(this.options.bucket, this.options.region);
    }
  }

  async put(key: string, body: Buffer | Readable, options: PutOptions): Promise<BlobInfo> {
    checkBlobKey(key);
    const size = Buffer.isBuffer(body) ? body.length : options.size;
    await this.client.putObject(this.options.bucket, key, body, size, { 'Content-Type': options.contentType });
    const info = await this.stat(key);
    if (!info) throw new Error(`blob "${key}" was written but cannot be found`);
    return info;
  }

  async stat(key: string): Promise<BlobInfo | null> {
    checkBlobKey(key);
    try {
      const stat = await this.client.statObject(this.options.bucket, key);
      const contentType = String(stat.metaData['content-type'] ?? 'application/octet-stream');
      return { key, size: stat.size, contentType };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async get(key: string): Promise<BlobObject> {
    const info = await this.stat(key);
    if (!info) throw new BlobNotFoundError(key);
    try {
      return { ...info, body: await this.client.getObject(this.options.bucket, key) };
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key);
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    checkBlobKey(key);
    await this.client.removeObject(this.options.bucket, key);
  }

  async presignGet(key: string, expiresInSeconds: number): Promise<string | null> {
    checkBlobKey(key);
    return this.client.presignedGetObject(this.options.bucket, key, expiresInSeconds);
  }
}
