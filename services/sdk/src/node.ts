/**
 * Node-only helpers of the SDK (`@svc/sdk/node`): uploading files from disk, and verifying webhook
 * deliveries (node:crypto). The main entry point
 * has no Node API, so it also runs in browsers.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Artifact } from '../../contract';
import type { Client } from './client';
import { upload, type UploadOptions } from './upload';

/** Streams a file from disk to `POST /v1/uploads` (never read whole into memory); its base name is the stored name. */
export async function uploadFile(client: Client, filePath: string, options: UploadOptions = {}): Promise<Artifact> {
  const info = await stat(filePath);
  if (!info.isFile()) throw new Error(`${filePath} is not a file`);
  const body = Readable.toWeb(createReadStream(filePath)) as ReadableStream<Uint8Array>;
  return upload(client, body, { filename: path.basename(filePath), ...options });
}

/** Uploads the bytes of a Node stream (a socket, a pipe, a generated file) or any async iterable of chunks. */
export function uploadStream(client: Client, stream: AsyncIterable<Uint8Array>, options: UploadOptions = {}): Promise<Artifact> {
  const body = Readable.toWeb(Readable.from(stream)) as ReadableStream<Uint8Array>;
  return upload(client, body, options);
}


export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions, type WebhookDelivery } from './node/webhook-verify';
