import type { Readable } from 'node:stream';

/** What is known about a stored blob. */
export interface BlobInfo {
  key: string;
  size: number;
  contentType: string;
}

/** A stored blob's bytes as a stream, with its metadata. */
export interface BlobObject extends BlobInfo {
  body: Readable;
}

export interface PutOptions {
  contentType: string;
  /** Byte length, when known (lets S3 drivers skip multipart buffering). */
  size?: number;
}

/**
 * The blob store port: where binary run outputs and uploaded inputs live. Drivers: the local
 * filesystem (the embedded default) and any S3-compatible server (MinIO, AWS S3, Ceph RGW).
 * Callers never see a driver's URL; they get the service's own signed URLs (url-signer.ts).
 */
export interface BlobStore {
  /** Stores bytes under `key`, replacing what was there. */
  put(key: string, body: Buffer | Readable, options: PutOptions): Promise<BlobInfo>;
  /** The blob's bytes; throws `BlobNotFoundError` when there is none. */
  get(key: string): Promise<BlobObject>;
  /** Metadata, or null when there is no such blob. */
  stat(key: string): Promise<BlobInfo | null>;
  /** Removes the blob; removing a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /** A native presigned GET URL of the store, or null for drivers without one. */
  presignGet(key: string, expiresInSeconds: number): Promise<string | null>;
}

/** Thrown by `get` for a key with no blob. */
export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`no blob with key "${key}"`);
    this.name = 'BlobNotFoundError';
  }
}

/** Thrown for keys that could escape the store or that S3 would treat differently from a filesystem. */
export class InvalidBlobKeyError extends Error {
  constructor(readonly key: string, reason: string) {
    super(`invalid blob key "${key}": ${reason}`);
    this.name = 'InvalidBlobKeyError';
  }
}

const KEY_CHARS = /^[A-Za-z0-9._\-/]+$/;
const MAX_KEY_LENGTH = 512;

/** Checks a key: path-like segments of safe characters, no `.`/`..` segments, no leading `/`. */
export function checkBlobKey(key: string): string {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw new InvalidBlobKeyError(key, `length must be 1 to ${MAX_KEY_LENGTH}`);
  if (!KEY_CHARS.test(key)) throw new InvalidBlobKeyError(key, 'only letters, digits, ".", "_", "-" and "/" are allowed');
  const segments = key.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) {
    throw new InvalidBlobKeyError(key, 'segments must be non-empty and not "." or ".."');
  }
  return key;
}
