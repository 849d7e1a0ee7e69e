import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Artifact } from '../contract';
import { BlobNotFoundError, type BlobStore, type BlobUrlSigner } from '../blobs';
import { AppError } from '../platform/app-error';
import type { ArtifactRecorder } from './artifact-recorder';
import type { RemoteFetcher } from './fetch/input-fetcher';
import { dataKindOfMimeType, type ArtifactBytes, type ArtifactStore, type PutArtifactOptions } from './artifact-store';

export interface BlobArtifactStoreOptions {
  store: BlobStore;
  signer: BlobUrlSigner;
  /** The base the signer builds URLs from: refs under `<base>/blobs/` are ours. */
  publicBaseUrl: string;
  /** Key prefix of what this store writes, e.g. `runs/<runId>`. */
  keyPrefix: string;
  /** Lifetime of the signed URLs it hands out when `retentionSeconds` is not given. */
  urlTtlSeconds: number;
  /**
   * How long a stored artifact is kept (run artifacts: `ARTIFACT_RETENTION_DAYS`). When given, each
   * `put` gets `expiresAt = now + retentionSeconds` (whole seconds), recorded for the retention
   * sweeper, and its signed URL expires exactly then, so the URL stays valid for the artifact's
   * whole life. Absent: the artifact never expires (recipe assets) and URLs live `urlTtlSeconds`.
   */
  retentionSeconds?: number;
  /**
   * When the signed URLs of what it stores expire, if not by `retentionSeconds` or `urlTtlSeconds`:
   * recipe assets get a far-future instant, since they live as long as their workflow (the blob
   * route refuses them once the workflow is deleted).
   */
  urlExpiresAt?: Date;
  /** Told about every stored blob, after it is stored; a failure fails the `put` and removes the blob. */
  recorder?: ArtifactRecorder;
  /** Largest blob `read` loads into memory. */
  maxReadBytes?: number;
  /**
   * Fetches refs that are not the service's own URLs (`createInputFetcher`: public addresses only,
   * capped, timed). `read` re-hosts what it fetches under `keyPrefix`. Absent: such refs are refused.
   */
  fetchRemote?: RemoteFetcher;
  /** The step attempt's signal: an aborted step stops a remote fetch under way. */
  signal?: AbortSignal;
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
  'image/heic': '.heic',
  'audio/mp4': '.m4a',
  'video/mp4': '.mp4',
  'video/quicktime': '.mov',
  'video/webm': '.webm',
  'application/pdf': '.pdf',
  'application/json': '.json',
  'text/plain': '.txt',
};

/**
 * The artifact port over the blob store: outputs are stored under the run's prefix and handed
 * out as the service's own signed URLs; inputs that are such URLs are read back from the store.
 * Refs to other hosts are fetched with `fetchRemote` (when given) and re-hosted under the run's
 * prefix, once per ref and store.
 */
export class BlobArtifactStore implements ArtifactStore {
  private readonly ownPrefix: string;
  private readonly fetched = new Map<string, Promise<{ bytes: Buffer; mimeType: string; stored: Artifact }>>();

  constructor(private readonly options: BlobArtifactStoreOptions) {
    const { retentionSeconds } = options;
    if (retentionSeconds !== undefined && !(Number.isSafeInteger(retentionSeconds) && retentionSeconds > 0)) {
      throw new RangeError(`retentionSeconds must be a positive whole number, got ${retentionSeconds}`);
    }
    this.ownPrefix = `${options.publicBaseUrl.replace(/\/+$/, '')}/blobs/`;
  }

  async put(bytes: Buffer, options: PutArtifactOptions): Promise<Artifact> {
    return this.store(bytes, bytes.length, options);
  }

  /**
   * `put` for a stream, stored as it arrives (the blob store holds at most one part in memory).
   * `name`, a file name of blob-key characters without extension, is kept in the key
   * (`<prefix>/<uuid>/<name><ext>`) so that downloads carry it; the extension follows `mimeType`.
   */
  putStream(body: Readable, options: PutArtifactOptions & { name?: string }): Promise<Artifact> {
    return this.store(body, undefined, options);
  }

  private async store(body: Buffer | Readable, size: number | undefined, options: PutArtifactOptions & { name?: string }): Promise<Artifact> {
    const mimeType = options.mimeType.toLowerCase();
    const extension = EXTENSIONS[mimeType] ?? '';
    const key = options.name === undefined ? `${this.options.keyPrefix}/${randomUUID()}${extension}` : `${this.options.keyPrefix}/${randomUUID()}/${options.name}${extension}`;
    const stored = await this.options.store.put(key, body, { contentType: mimeType, ...(size === undefined ? {} : { size }) });
    const now = (this.options.now?.() ?? new Date()).getTime();
    const { retentionSeconds, recorder } = this.options;
    // Whole seconds, as the signed URL carries them: the URL and the record expire at the same instant.
    const expiresAt = retentionSeconds === undefined ? null : new Date((Math.floor(now / 1000) + retentionSeconds) * 1000);
    if (recorder) {
      try {
        await recorder.record({ blobKey: key, mimeType, sizeBytes: stored.size, metadata: options.metadata ?? {}, expiresAt });
      } catch (err) {
        // Unrecorded, the blob would never be swept.
        await this.options.store.delete(key).catch(() => undefined);
        throw err;
      }
    }
    const ref = this.options.signer.sign(key, expiresAt ?? this.options.urlExpiresAt ?? new Date(now + this.options.urlTtlSeconds * 1000));
    return { kind: dataKindOfMimeType(mimeType), ref, mimeType, ...(options.metadata ? { metadata: options.metadata } : {}) };
  }

  async read(artifact: Artifact): Promise<ArtifactBytes> {
    if (typeof artifact.ref !== 'string') {
      throw new AppError({ code: 'validation_failed', message: 'this input must be a "ref" artifact pointing at a file' });
    }
    if (!artifact.ref.startsWith(this.ownPrefix) && this.options.fetchRemote) return this.readRemote(artifact.ref);
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

  async fetchForeign(url: string): Promise<ArtifactBytes> {
    if (!this.options.fetchRemote) throw new AppError({ code: 'validation_failed', message: 'this service does not fetch files from other hosts' });
    const file = await this.options.fetchRemote(url, this.options.signal ? { signal: this.options.signal } : {});
    return { bytes: file.bytes, mimeType: file.mimeType };
  }

  /**
   * Fetches a foreign ref and stores a copy under the run's prefix (recorded like any `put`, so it
   * is swept with the run's artifacts); the bytes carry the sniffed mime type, not the caller's.
   */
  private async readRemote(ref: string): Promise<ArtifactBytes> {
    const { bytes, mimeType } = await this.rehost(ref);
    return { bytes, mimeType };
  }

  /**
   * The artifact as the service's own: our refs (and inline values) as they are, a foreign ref
   * fetched (safely, see `fetchRemote`) and stored under the run's prefix, so outputs never point
   * anywhere else. Refused when there is no `fetchRemote`.
   */
  async adopt(artifact: Artifact): Promise<Artifact> {
    if (typeof artifact.ref !== 'string' || artifact.ref.startsWith(this.ownPrefix)) return artifact;
    if (!this.options.fetchRemote) throw new AppError({ code: 'validation_failed', message: 'this service does not fetch files from other hosts' });
    const { stored } = await this.rehost(artifact.ref);
    return { ...stored, kind: artifact.kind, metadata: { ...artifact.metadata, ...stored.metadata } };
  }

  /**
   * The artifact as one stored under this store's prefix: inline values and refs already under it
   * as they are; the service's other refs (a run's output) read, after checking their signature,
   * and copied; foreign refs fetched as `adopt` does. Recipe assets are made this way at publish.
   */
  async adoptCopy(artifact: Artifact): Promise<Artifact> {
    if (typeof artifact.ref !== 'string') return artifact;
    if (!artifact.ref.startsWith(this.ownPrefix)) return this.adopt(artifact);
    if (this.ownKey(artifact.ref).startsWith(`${this.options.keyPrefix}/`)) return artifact;
    const { bytes, mimeType } = await this.read(artifact);
    const stored = await this.put(bytes, { mimeType, ...(artifact.metadata ? { metadata: artifact.metadata } : {}) });
    return { ...stored, kind: artifact.kind ?? stored.kind };
  }

  private rehost(ref: string): Promise<{ bytes: Buffer; mimeType: string; stored: Artifact }> {
    let pending = this.fetched.get(ref);
    if (!pending) {
      const fetchRemote = this.options.fetchRemote!;
      pending = (async () => {
        const file = await fetchRemote(ref, this.options.signal ? { signal: this.options.signal } : {});
        const stored = await this.put(file.bytes, { mimeType: file.mimeType, metadata: { sourceHost: new URL(file.finalUrl).host } });
        return { bytes: file.bytes, mimeType: file.mimeType, stored };
      })();
      // A failed fetch is not remembered: a retried step tries again.
      pending.catch(() => this.fetched.delete(ref));
      this.fetched.set(ref, pending);
    }
    return pending;
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
