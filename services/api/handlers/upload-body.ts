import { AppError } from '../../platform/app-error';

/**
 * The file of a `body: 'bytes'` route as the surface received it, not yet read: handlers decide
 * how much they take and read it as a stream, so a refused call reads nothing and a large file
 * is never held whole in memory.
 */
export interface UploadBody {
  /** The `type/subtype` the caller declared (Content-Type), lower-cased; '' when none. */
  mediaType: string;
  /** The length Content-Length announced; null when the body is sent in chunks. */
  declaredBytes: number | null;
  /** The bytes as they arrive; read once. */
  body: AsyncIterable<Buffer>;
}

/** No file at all (an in-process call without one). */
export function noUpload(): UploadBody {
  return { mediaType: '', declaredBytes: 0, body: (async function* () {})() };
}

function mebibytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return mib >= 1 ? ` (${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB)` : '';
}

/** `413` naming the limit. */
export function uploadTooLarge(limitBytes: number, announced?: number): AppError {
  const size = announced === undefined ? 'the file is larger than' : `Content-Length announces ${announced} bytes, more than`;
  return new AppError({
    code: 'payload_too_large',
    message: `${size} the limit of ${limitBytes} bytes${mebibytes(limitBytes)}; send a smaller file`,
    details: { limitBytes },
  });
}

/**
 * The upload's bytes, refused with `413` as soon as they pass `limitBytes`: before any is read
 * when Content-Length announces more, else at the chunk that crosses it. A body that breaks off
 * (the caller hangs up) is `400`.
 */
export async function* limitedBytes(upload: UploadBody, limitBytes: number): AsyncGenerator<Buffer> {
  if (upload.declaredBytes !== null && upload.declaredBytes > limitBytes) throw uploadTooLarge(limitBytes, upload.declaredBytes);
  let total = 0;
  const iterator = upload.body[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Buffer>;
    try {
      next = await iterator.next();
    } catch (err) {
      throw new AppError({ code: 'bad_request', message: 'the upload broke off before its end; send the whole file again', cause: err });
    }
    if (next.done) return;
    total += next.value.length;
    if (total > limitBytes) throw uploadTooLarge(limitBytes);
    yield next.value;
  }
}

/** The whole upload in memory, for files bounded by a small limit (recipe assets). */
export async function readUploadBytes(upload: UploadBody, limitBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of limitedBytes(upload, limitBytes)) chunks.push(chunk);
  return Buffer.concat(chunks);
}
