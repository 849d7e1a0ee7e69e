import { randomUUID } from 'node:crypto';
import type { Artifact } from '../contract';
import { BlobNotFoundError, type BlobStore, type BlobUrlSigner } from '../blobs';
import { AppError } from '../platform/app-error';
import { dataKindOfMimeType, type ArtifactBytes, type ArtifactStore, type PutArtifactOptions } from './artifact-store';

export interface BlobArtifactStoreOptions {
  store: BlobStore;
  signer: BlobUrlSigner;
  /** The base the signer builds URLs from: refs under `<base>/blobs/` are ours. */
  publicBaseUrl: string;
  /** Key prefix of what this store writes, e.g. `runs/<runId>`. */
  keyPrefix: string;
  /** Lifetime of the signed URLs it hands out. */
  urlTtlSeconds: number;
  /** Largest blob `read` loads into memory. */
  maxReadBytes?: number;
  now?: () => Date;
}

const EXTENSIONS: Record<string, string> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/webp': '.webp',
  'image/avif': '.avif',
  'image/gif': '.gif',
  'audio/mpeg': '.mp3',
  'audio/wav': '.wav',
  'audio/ogg': '.ogg',
  'video/mp4': '.mp4',
  'application/json': '.json',
  'text/plain': '.txt',
};

/**
 * The artifact port over the blob store: outputs are stored under the run's prefix and handed
 * out as the service's own signed URLs; inputs that are such URLs are read back from the store.
 * Refs to other hosts are refused here: fetching them safely is a separate capability.
 */
export class BlobArtifactStore implements ArtifactStore {
  private readonly ownPrefix: string;

  constructor(private readonly options: BlobArtifactStoreOptions) {
    this.ownPrefix = `${options.publicBaseUrl.replace(/\/+$/, '')}/blobs/`;
  }

  async put(bytes: Buffer, options: PutArtifactOptions): Promise<Artifact> {
    const mimeType = options.mimeType.toLowerCase();
    const key = `${this.options.keyPrefix}/${randomUUID()}${EXTENSIONS[mimeType] ?? ''}`;
    await this.options.store.put(key, bytes, { contentType: mimeType, size: bytes.length });
    const now = this.options.now?.() ?? new Date();
    const ref = this.options.signer.sign(key, new Date(now.getTime() + this.options.urlTtlSeconds * 1000));
    return { kind: dataKindOfMimeType(mimeType), ref, mimeType, ...(options.metadata ? { metadata: options.metadata } : {}) };
  }

  async read(artifact: Artifact): Promise<ArtifactBytes> {
    if (typeof artifact.ref !== 'string') {
      throw new AppError({ code: 'validation_failed', message: 'this input must be a "ref" artifact pointing at a file' });
    }
    const key = this.ownKey(artifact.ref);
    try {
      const blob = await this.options.store.get(key);
      const limit = this.options.maxReadBytes ?? 64 * 1024 * 1024;
      if (blob.size > limit) {
        blob.body.destroy();
        throw new AppError({ code: 'validation_failed', message: `the file is ${blob.size} bytes; the limit is ${limit} bytes` });
      }
      const chunks: Buffer[] = [];
      for await (const chunk of blob.body) chunks.push(chunk as Buffer);
      return { bytes: Buffer.concat(chunks), mimeType: artifact.mimeType ?? blob.contentType };
    } catch (err) {
      if (err instanceof BlobNotFoundError) {
        throw new AppError({ code: 'not_found', message: 'the file behind this ref no longer exists (run artifacts are kept for 30 days)' });
      }
      throw err;
    }
  }

  /** The blob key of one of our own signed URLs, after checking its signature and expiry. */
  private ownKey(ref: string): string {
    if (!ref.startsWith(this.ownPrefix)) {
      throw new AppError({ code: 'validation_failed', message: 'only files stored by this service can be read for now; upload the file first, then pass the URL the service gives back' });
    }
    const url = new URL(ref);
    const key = url.pathname.slice(new URL(this.ownPrefix).pathname.length);
    const check = this.options.signer.verify(key, url.searchParams.get('expires') ?? undefined, url.searchParams.get('signature') ?? undefined, this.options.now?.());
    if (!check.ok) {
      throw new AppError({ code: 'validation_failed', message: `the file URL is not valid (${check.reason.replace('_', ' ')}); use the URL exactly as the service gave it` });
    }
    return key;
  }
}
