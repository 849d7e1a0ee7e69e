import { Readable } from 'node:stream';
import type { Artifact } from '../../contract';
import { sniffStream } from '../../nodes/fetch/sniff-stream';
import { AppError } from '../../platform/app-error';
import type { Handler } from './handler-types';
import { limitedBytes, noUpload } from './upload-body';

/** Port: where uploads are stored (the nodes' `Uploads` satisfies it). */
export interface UploadHost {
  /** Streams `body` into the organization's uploads; answers a ref artifact usable as a run input. */
  store(orgId: string, body: Readable, file: { mimeType: string; filename?: string }): Promise<Artifact>;
}

export interface UploadHandlerDeps {
  uploads: UploadHost;
  /** Largest file taken (`UPLOAD_MAX_BYTES`). */
  maxBytes: number;
}

/** What `sniffStream` recognises, as a caller would name the formats. */
const ACCEPTED =
  'PNG, JPEG, GIF, WebP, AVIF or HEIC images; MP3, WAV, Ogg or M4A audio; MP4, QuickTime or WebM video; PDF documents; UTF-8 text';

/** A plain file name: no path, no control characters, not `.` or `..`. */
function checkFilename(filename: string): void {
  // eslint-disable-next-line no-control-regex
  if (/[/\\\u0000-\u001f\u007f]/.test(filename) || filename === '.' || filename === '..') {
    const message = 'filename must be a plain file name such as "photo.png": no "/" or "\\", no control characters, not "." or ".."';
    throw new AppError({ code: 'validation_failed', message, details: { issues: [{ path: 'filename', message }] } });
  }
}

/**
 * `POST /v1/uploads` (docs/uploads.md): the body streams through the size limit and the type
 * check into the blob store; nothing is stored when either refuses it. The type is what the
 * bytes are, whatever Content-Type or the file name say; it decides the artifact's kind.
 */
export function uploadHandlers(deps: UploadHandlerDeps): { 'uploads.create': Handler<'uploads.create'> } {
  return {
    'uploads.create': async ({ filename }, ctx) => {
      if (filename !== undefined) checkFilename(filename);
      const sniffed = await sniffStream(limitedBytes(ctx.upload ?? noUpload(), deps.maxBytes));
      if (sniffed.empty) throw new AppError({ code: 'bad_request', message: 'the upload is empty: send the file\'s bytes as the request body' });
      if (sniffed.mimeType === null) {
        throw new AppError({ code: 'unsupported_media_type', message: `the file's type is not one the service reads (${ACCEPTED}); the type is read from the bytes, not from Content-Type or the name` });
      }
      return deps.uploads.store(ctx.auth!.orgId, Readable.from(sniffed.body, { objectMode: false }), {
        mimeType: sniffed.mimeType,
        ...(filename === undefined ? {} : { filename }),
      });
    },
  };
}
