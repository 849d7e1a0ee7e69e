import type { Artifact, ArtifactKind } from '../contract';

/** What a node says about bytes it stores. */
export interface PutArtifactOptions {
  /** Media type of the bytes, e.g. `image/png`; it also decides the artifact's kind (see `dataKindOfMimeType`). */
  mimeType: string;
  /** Small JSON facts carried on the artifact envelope, e.g. `{ width, height }` for images. */
  metadata?: Record<string, unknown>;
}

/** Bytes read back from an artifact. */
export interface ArtifactBytes {
  bytes: Buffer;
  mimeType: string;
}

/**
 * The port through which nodes read input media and store output media. The runner implements
 * it over the blob store; nodes never see storage keys, buckets or provider URLs.
 */
export interface ArtifactStore {
  /**
   * Stores bytes and returns a `ref` artifact (a URL into the service's own storage) with the
   * given `mimeType` and `metadata`, of the kind `dataKindOfMimeType(mimeType)`.
   */
  put(bytes: Buffer, options: PutArtifactOptions): Promise<Artifact>;
  /**
   * Reads the bytes of a data artifact. Rejects when the ref does not resolve; the mime type is
   * the artifact's own, or what the store recorded for it.
   */
  read(artifact: Artifact): Promise<ArtifactBytes>;
  /**
   * Reads a file on another host (a provider's CDN link) through the service's safe fetching:
   * the address rules of input URLs, their size and time limits, the step's signal. Nothing is
   * stored. Rejects with `validation_failed` where the rules refuse the URL, or where this store
   * fetches nothing from other hosts.
   */
  fetchForeign(url: string): Promise<ArtifactBytes>;
}

/**
 * The artifact kind for stored bytes of a media type: `image/*`, `audio/*` and `video/*` give
 * their media kind, anything else is a `file`. Every `ArtifactStore` uses this rule, so a node
 * that puts `image/png` bytes always gets an `image` artifact back.
 */
export function dataKindOfMimeType(mimeType: string): Extract<ArtifactKind, 'image' | 'audio' | 'video' | 'file'> {
  const top = mimeType.split('/', 1)[0]!.trim().toLowerCase();
  if (top === 'image' || top === 'audio' || top === 'video') return top;
  return 'file';
}
