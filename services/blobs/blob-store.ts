import type { Readable } from 'node:stream';

/** What is known about a stored blob. */
export interface BlobInfo {
  key: string;
  /** Length in bytes. */
  size: number;
  contentType: string;
}

/**
 * A stored blob's bytes as a stream, with its metadata (`size` is the whole blob's length, also
 * when `body` holds only a range of it). Read or destroy `body`: it holds a file or a connection.
 */
export interface BlobObject extends BlobInfo {
  body: Readable;
}

/** Bytes `start` through `end`, both included (as HTTP's `Range: bytes=start-end` counts them), with `start <= end`. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface PutOptions {
  contentType: string;
  /** The body's exact length, when known: a body of another length is refused and nothing is stored. */
  size?: number;
}

/**
 * The blob store port: where binary run outputs and uploaded inputs live. Drivers: the local
 * filesystem (the embedded default) and any S3-compatible server (MinIO, AWS S3, Ceph RGW).
 * Keys are checked by `checkBlobKey` in every method. Callers of the service never see a
 * driver's URL; they get the service's own signed URLs (url-signer.ts).
 */
export interface BlobStore {
  /** Stores bytes under `key`, replacing whatever was there; readers see the old or the new blob, never a mix. */
  put(key: string, body: Buffer | Readable, options: PutOptions): Promise<BlobInfo>;
  /**
   * The blob's bytes and metadata, or only the bytes of `range` (an `end` past the blob's last
   * byte reads to its end; a `start` past it, `RangeError`); throws `BlobNotFoundError` when
   * there is no such blob.
   */
  get(key: string, range?: ByteRange): Promise<BlobObject>;
  /** Metadata, or null when there is no such blob. */
  stat(key: string): Promise<BlobInfo | null>;
  /** Removes the blob; removing a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /** A presigned GET URL of the store itself, or null for drivers without one. Internal use only. */
  presignGet(key: string, expiresInSeconds: number): Promise<string | null>;
}
