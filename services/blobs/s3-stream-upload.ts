import type { Readable } from 'node:stream';
import type { Client } from 'minio';
import { byteParts } from './byte-parts';

// S3's smallest part is 5 MiB and an upload has at most 10 000 parts: 16 MiB parts allow blobs
// of 160 GiB while one upload holds 16 MiB in memory.
const PART_SIZE = 16 * 1024 * 1024;

export interface StreamUpload {
  client: Client;
  bucket: string;
  key: string;
  body: Readable;
  /** The announced length, checked against the body. */
  size: number | undefined;
  headers: Record<string, string>;
}

/**
 * Uploads a stream: in one PUT when it fits in one part, otherwise as a multipart upload, part by
 * part. Any failure (the source, a size mismatch, the server) aborts the multipart upload, so the
 * key keeps its previous blob. Returns the number of bytes stored.
 *
 * The client's own putObject is not used for streams: with no size given it buffers parts of
 * about 550 MB, and a failing source leaves its promise pending forever.
 */
export async function uploadStream(upload: StreamUpload): Promise<number> {
  const { client, bucket, key, headers } = upload;
  const parts = byteParts(key, upload.body, PART_SIZE, upload.size);
  const first = await parts.next();
  const second = first.done ? first : await parts.next();
  if (second.done) {
    const only = first.done ? Buffer.alloc(0) : first.value;
    await client.putObject(bucket, key, only, only.length, headers);
    return only.length;
  }

  const uploadId = await client.initiateNewMultipartUpload(bucket, key, headers);
  try {
    const etags: { part: number; etag: string }[] = [];
    let size = 0;
    const send = async (bytes: Buffer) => {
      const part = etags.length + 1;
      const { etag } = await client.uploadPart({ bucketName: bucket, objectName: key, uploadID: uploadId, partNumber: part, headers: {} }, bytes);
      etags.push({ part, etag });
      size += bytes.length;
    };
    await send(first.value as Buffer);
    await send(second.value);
    for await (const bytes of parts) await send(bytes);
    await client.completeMultipartUpload(bucket, key, uploadId, etags);
    return size;
  } catch (err) {
    await parts.return(undefined); // releases the source stream if the failure was ours
    await client.abortMultipartUpload(bucket, key, uploadId).catch(() => undefined);
    throw err;
  }
}
