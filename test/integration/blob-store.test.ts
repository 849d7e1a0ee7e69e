import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import express from 'express';
import request from 'supertest';
import { BlobNotFoundError, BlobUrlSigner, FsBlobStore, InvalidBlobKeyError, S3BlobStore, type BlobStore } from '../../services/blobs';
import { createBlobRouter } from '../../services/api/routes/blob-route';
import { errorHandler } from '../../services/api/http/error-handler';
import { createLogger } from '../../services/platform/logger';
import { stack, uniqueName } from '../support/stack';

async function bytesOf(store: BlobStore, key: string): Promise<Buffer> {
  const blob = await store.get(key);
  const chunks: Buffer[] = [];
  for await (const chunk of blob.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const drivers: [string, () => Promise<BlobStore>][] = [
  ['filesystem', async () => new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blobs-')))],
  [
    's3 (Ceph RGW)',
    async () => {
      const store = new S3BlobStore({ ...stack().s3, bucket: uniqueName('blobs') });
      await store.init();
      return store;
    },
  ],
];

describe.each(drivers)('blob store: %s driver', (_name, make) => {
  let store: BlobStore;
  beforeAll(async () => {
    store = await make();
  });

  it('round-trips binary bytes with their content type', async () => {
    const bytes = randomBytes(70_000);
    expect(await store.put('runs/r1/out.bin', bytes, { contentType: 'application/octet-stream' })).toEqual({ key: 'runs/r1/out.bin', size: 70_000, contentType: 'application/octet-stream' });
    expect(await store.stat('runs/r1/out.bin')).toEqual({ key: 'runs/r1/out.bin', size: 70_000, contentType: 'application/octet-stream' });
    expect((await bytesOf(store, 'runs/r1/out.bin')).equals(bytes)).toBe(true);
  });

  it('stores a streamed upload of several megabytes', async () => {
    const parts = Array.from({ length: 6 }, () => randomBytes(1024 * 1024));
    await store.put('big/stream.bin', Readable.from(parts), { contentType: 'video/mp4', size: 6 * 1024 * 1024 });
    expect((await store.stat('big/stream.bin'))?.size).toBe(6 * 1024 * 1024);
    expect((await bytesOf(store, 'big/stream.bin')).equals(Buffer.concat(parts))).toBe(true);
  });

  it('overwrites, reports missing keys, and deletes idempotently', async () => {
    await store.put('k.txt', Buffer.from('one'), { contentType: 'text/plain' });
    await store.put('k.txt', Buffer.from('two!'), { contentType: 'text/markdown' });
    const blob = await store.get('k.txt');
    expect([blob.size, blob.contentType, await text(blob.body)]).toEqual([4, 'text/markdown', 'two!']);
    await store.delete('k.txt');
    await store.delete('k.txt');
    expect(await store.stat('k.txt')).toBeNull();
    await expect(store.get('k.txt')).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it.each(['../etc/passwd', '/abs', 'a//b', 'a/./b', 'spaces here', ''])('rejects the key %j', async (key) => {
    await expect(store.put(key, Buffer.from('x'), { contentType: 'text/plain' })).rejects.toBeInstanceOf(InvalidBlobKeyError);
  });
});

describe('S3 presigned URLs from the real server', () => {
  it('serve the bytes, and a tampered signature gets 403 from the server itself', async () => {
    const store = new S3BlobStore({ ...stack().s3, bucket: uniqueName('presign') });
    await store.init();
    await store.put('p/hello.txt', Buffer.from('hello s3'), { contentType: 'text/plain' });
    const url = (await store.presignGet('p/hello.txt', 60))!;
    const ok = await fetch(url);
    expect([ok.status, await ok.text()]).toEqual([200, 'hello s3']);
    const tampered = url.replace(/X-Amz-Signature=([0-9a-f])/, (_m, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`);
    const refused = await fetch(tampered);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('SignatureDoesNotMatch');
  });
});

describe('the service’s own blob URLs', () => {
  const secret = 'x'.repeat(40);
  const signer = new BlobUrlSigner({ publicBaseUrl: 'http://svc.test', secret });
  const store = new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-blob-route-')));
  const app = express();
  app.use(createBlobRouter({ store, signer }));
  app.use(errorHandler(createLogger({ level: 'silent' })));
  const pathOf = (url: string) => url.slice('http://svc.test'.length);

  beforeAll(async () => {
    await store.put('runs/r9/image.png', Buffer.from('PNGDATA'), { contentType: 'image/png' });
  });

  it('stream a blob for a valid signature, with HEAD too', async () => {
    const url = signer.sign('runs/r9/image.png', new Date(Date.now() + 60_000));
    const res = await request(app).get(pathOf(url)).expect(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['content-length']).toBe('7');
    expect(Buffer.from(res.body as Buffer).toString()).toBe('PNGDATA');
    await request(app).head(pathOf(url)).expect(200);
  });

  it('refuse expired, tampered and unsigned URLs with a message saying which', async () => {
    const expired = signer.sign('runs/r9/image.png', new Date(Date.now() - 1000));
    expect((await request(app).get(pathOf(expired)).expect(403)).body.error).toContain('expired');
    const valid = signer.sign('runs/r9/image.png', new Date(Date.now() + 60_000));
    const otherKey = pathOf(valid).replace('image.png', 'other.png');
    expect((await request(app).get(otherKey).expect(403)).body.error).toContain('signature does not match');
    expect((await request(app).get('/blobs/runs/r9/image.png').expect(403)).body.error).toContain('lacks');
  });

  it('answer 404 for a signed URL whose blob is gone', async () => {
    const url = signer.sign('runs/r9/gone.png', new Date(Date.now() + 60_000));
    expect((await request(app).get(pathOf(url)).expect(404)).body.code).toBe('not_found');
  });
});
