import type { Readable } from 'node:stream';
import type { Artifact } from '../contract';
import type { BlobStore, BlobUrlSigner } from '../blobs';
import type { ArtifactRecorder } from './artifact-recorder';
import { BlobArtifactStore } from './blob-artifact-store';

/**
 * Uploaded files (`POST /v1/uploads`, the SDK's `upload`): run inputs sent ahead of the run.
 * They are run artifacts in all but the run: stored under `uploads/<orgId>/`, recorded in the
 * artifacts table without a run and with the run artifacts' expiry, so the retention sweeper
 * deletes them after `ARTIFACT_RETENTION_DAYS` like any run artifact, and handed out as signed
 * URLs that expire with them. A run reads such a URL back from the store like its own outputs
 * (docs/uploads.md).
 */

/** The key prefix of an organization's uploads. */
export function uploadPrefix(orgId: string): string {
  return `uploads/${orgId}`;
}

/** Longest stored name (its extension aside): keys stay far below the blob store's 512 characters. */
const MAX_STORED_NAME = 100;

/**
 * A caller's file name as a blob-key segment, without its extension (the stored extension
 * follows the detected type): runs of other characters become `-`; null when nothing is left.
 */
export function storedNameOf(filename: string): string | null {
  const dot = filename.lastIndexOf('.');
  const stem = dot > 0 ? filename.slice(0, dot) : filename;
  const name = stem
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[.-]+|[.-]+$/g, '')
    .slice(0, MAX_STORED_NAME)
    .replace(/[.-]+$/, '');
  return name === '' ? null : name;
}

export interface UploadsOptions {
  store: BlobStore;
  signer: BlobUrlSigner;
  publicBaseUrl: string;
  /** Records uploads (run id null; the expiry is what tells the sweeper to delete them). */
  recorder: ArtifactRecorder;
  /** How long an upload is kept: the run artifacts' retention. */
  retentionSeconds: number;
}

/** What {@link Uploads.store} is told about a file besides its bytes. */
export interface UploadFile {
  /** The detected media type; it decides the artifact's kind and the stored extension. */
  mimeType: string;
  /** The caller's file name, already checked to be a plain name. */
  filename?: string;
}

/** Stores an organization's uploads. */
export class Uploads {
  constructor(private readonly options: UploadsOptions) {}

  /** Streams `body` into the store; the answer is a ref artifact the organization can pass as a run input. */
  store(orgId: string, body: Readable, file: UploadFile): Promise<Artifact> {
    const { store, signer, publicBaseUrl, recorder, retentionSeconds } = this.options;
    const artifacts = new BlobArtifactStore({ store, signer, publicBaseUrl, keyPrefix: uploadPrefix(orgId), urlTtlSeconds: retentionSeconds, retentionSeconds, recorder });
    const name = file.filename === undefined ? null : storedNameOf(file.filename);
    return artifacts.putStream(body, {
      mimeType: file.mimeType,
      ...(file.filename === undefined ? {} : { metadata: { filename: file.filename } }),
      ...(name === null ? {} : { name }),
    });
  }
}
