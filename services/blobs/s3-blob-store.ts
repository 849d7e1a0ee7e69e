import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { Client, S3Error } from 'minio';
import { BlobNotFoundError, BlobSizeMismatchError } from './blob-errors';
import { checkBlobKey, checkContentType } from './blob-key';
import type { BlobInfo, BlobObject, BlobStore, ByteRange, PutOptions } from './blob-store';
import { uploadStream } from './s3-stream-upload';

export interface S3BlobStoreOptions {
  /**
   * The server: a URL (`http://127.0.0.1:9000`, `https://s3.eu-west-1.amazonaws.com`), which
   * gives host, port and TLS; or a bare host name, with `port` and `useSSL`.
   */
  endpoint: string;
  /** Used with a bare host name; default 443 with TLS, else 80. */
  port?: number;
  /** Used with a bare host name; default true. */
  useSSL?: boolean;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** Default `us-east-1`, which MinIO and Ceph RGW accept. */
  region?: string;
  /** Force path-style requests (`host/bucket/key`); default: path style, virtual hosts on AWS. */
  pathStyle?: boolean;
}

/** The minio client settings of an endpoint given as a URL or as a host with port and TLS. */
function clientEndpoint(options: S3BlobStoreOptions): { endPoint: string; port: number; useSSL: boolean } {
  if (options.endpoint.includes('://')) {
    const url = new URL(options.endpoint);
    const useSSL = url.protocol === 'https:';
    return { endPoint: url.hostname, port: url.port ? Number(url.port) : useSSL ? 443 : 80, useSSL };
  }
  const useSSL = options.useSSL ?? true;
  return { endPoint: options.endpoint, port: options.port ?? (useSSL ? 443 : 80), useSSL };
}

/** HEAD answers a missing object with `NotFound` (no body to carry a code), GET with `NoSuchKey`. */
function isMissingObject(err: unknown): boolean {
  return err instanceof S3Error && (err.code === 'NoSuchKey' || err.code === 'NotFound');
}

/**
 * Blobs in an S3-compatible bucket through the `minio` client: MinIO, AWS S3, Ceph RGW. Call
 * `init()` once before use: it creates the bucket when missing.
 */
export class S3BlobStore implements BlobStore {
  private readonly client: Client;
  private readonly bucket: string;
  private readonly region: string;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.region = options.region ?? 'us-east-1';
    this.client = new Client({
      ...clientEndpoint(options),
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: this.region,
      ...(options.pathStyle === undefined ? {} : { pathStyle: options.pathStyle }),
    });
  }

  /** Creates the bucket when it does not exist yet (several processes may race to do it). */
  async init(): Promise<void> {
    if (await this.client.bucketExists(this.bucket)) return;
    try {
      await this.client.makeBucket(this.bucket, this.region);
    } catch (err) {
      if (!(err instanceof S3Error && err.code === 'BucketAlreadyOwnedByYou')) throw err;
    }
  }

  async put(key: string, body: Buffer | Readable, options: PutOptions): Promise<BlobInfo> {
    checkBlobKey(key);
    const contentType = checkContentType(options.contentType);
    const meta = { 'Content-Type': contentType };
    if (Buffer.isBuffer(body)) {
      if (options.size !== undefined && options.size !== body.length) throw new BlobSizeMismatchError(key, options.size, body.length);
      await this.client.putObject(this.bucket, key, body, body.length, meta);
      return { key, size: body.length, contentType };
    }
    const size = await uploadStream({ client: this.client, bucket: this.bucket, key, body, size: options.size, headers: meta });
    return { key, size, contentType };
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject> {
    checkBlobKey(key);
    let body: Readable;
    try {
      body = range
        ? await this.client.getPartialObject(this.bucket, key, range.start, range.end - range.start + 1)
        : await this.client.getObject(this.bucket, key);
    } catch (err) {
      if (isMissingObject(err)) throw new BlobNotFoundError(key);
      if (range && err instanceof S3Error && err.code === 'InvalidRange') throw new RangeError(`bytes from ${range.start} are past the end of blob ${key}`);
      throw err;
    }
    // The client hands back the HTTP response itself; its headers save a HEAD request. A range's
    // Content-Length is the range's; the whole length is after the "/" of its Content-Range.
    const headers = (body as Partial<IncomingMessage>).headers;
    const length = Number(range ? /\/(\d+)$/.exec(String(headers?.['content-range'] ?? ''))?.[1] : headers?.['content-length']);
    if (headers && Number.isSafeInteger(length)) {
      return { key, size: length, contentType: headers['content-type'] ?? 'application/octet-stream', body };
    }
    const info = await this.stat(key);
    if (!info) {
      body.destroy();
      throw new BlobNotFoundError(key);
    }
    return { ...info, body };
  }

  async stat(key: string): Promise<BlobInfo | null> {
    checkBlobKey(key);
    try {
      const stat = await this.client.statObject(this.bucket, key);
      return { key, size: stat.size, contentType: String(stat.metaData['content-type'] ?? 'application/octet-stream') };
    } catch (err) {
      if (isMissingObject(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    checkBlobKey(key);
    // S3 answers 204 for a missing key too: deleting is idempotent by itself.
    await this.client.removeObject(this.bucket, key);
  }

  async presignGet(key: string, expiresInSeconds: number): Promise<string | null> {
    checkBlobKey(key);
    return this.client.presignedGetObject(this.bucket, key, expiresInSeconds);
  }
}
