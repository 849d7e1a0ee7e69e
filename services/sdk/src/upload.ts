import type { Artifact } from '../../contract';
import type { CallOptions } from './call';
import type { Client } from './client';
import type { RequestBody } from './transport';

/** What {@link upload} sends: bytes in any of the platform's forms. */
export type UploadData = Blob | ArrayBuffer | Uint8Array | ReadableStream<Uint8Array>;

/** Options of {@link upload}. */
export interface UploadOptions extends CallOptions {
  /** A plain file name (no `/`), kept as the stored name; a `File`'s own name is used when omitted. */
  filename?: string;
  /** The type the caller believes the file has; the service reads the type from the bytes regardless. */
  mimeType?: string;
}

/**
 * `POST /v1/uploads`: stores a local file as a run artifact of the organization (kept for the
 * run-artifact retention period) and resolves with a ref Artifact (`{ kind, url }`) to give as a
 * run input. The kind comes from the file's bytes (a PNG is `IMAGE` whatever its name). In Node,
 * `uploadFile(client, path)` from `@svc/sdk/node` streams a file from disk.
 */
export function upload(client: Client, data: UploadData, options: UploadOptions = {}): Promise<Artifact> {
  const { filename, mimeType, ...call } = options;
  const name = filename ?? nameOf(data);
  const body: RequestBody = data instanceof Uint8Array ? new Blob([data as Uint8Array<ArrayBuffer>]) : data;
  const contentType = mimeType ?? (typeof Blob !== 'undefined' && data instanceof Blob && data.type ? data.type : undefined);
  return client.routes['uploads.create'](name === undefined ? {} : { filename: name }, { ...call, body, contentType });
}

function nameOf(data: UploadData): string | undefined {
  const named = data as { name?: unknown };
  return typeof named.name === 'string' && named.name !== '' ? named.name : undefined;
}
