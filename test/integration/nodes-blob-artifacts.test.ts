import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import request from 'supertest';
import sharp from 'sharp';
import { createBlobRouter } from '../../services/api/routes/blob-route';
import { errorHandler } from '../../services/api/http/error-handler';
import { BlobUrlSigner, FsBlobStore, S3BlobStore, type BlobStore } from '../../services/blobs';
import { BlobArtifactStore } from '../../services/nodes';
import { createLogger } from '../../services/platform/logger';
import { nodeContext, platformNode } from '../support/node-harness';
import { stack, uniqueName } from '../support/stack';

const BASE = 'http://svc.test';
const signer = new BlobUrlSigner({ publicBaseUrl: BASE, secret: 'k'.repeat(40) });

const drivers: [string, () => Promise<BlobStore>][] = [
  ['filesystem', async () => new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-node-blobs-')))],
  [
    's3 (Ceph RGW)',
    async () => {
      const store = new S3BlobStore({ ...stack().s3, bucket: uniqueName('nodes') });
      await store.init();
      return store;
    },
  ],
];

describe.each(drivers)('image nodes over the %s blob store', (_name, make) => {
  let store: BlobStore;
  let artifacts: BlobArtifactStore;
  let app: express.Express;

  beforeAll(async () => {
    store = await make();
    artifacts = new BlobArtifactStore({ store, signer, publicBaseUrl: BASE, keyPrefix: 'runs/test-run', urlTtlSeconds: 600 });
    app = express();
    app.use(createBlobRouter({ store, signer, workflowLive: async () => true }));
    app.use(errorHandler(createLogger({ level: 'silent' })));
  });

  it('stores an input, resizes and converts it, and serves the output through the service’s own URL', async () => {
    const png = await sharp({ create: { width: 64, height: 32, channels: 3, background: '#0a0' } }).png().toBuffer();
    const input = await artifacts.put(png, { mimeType: 'image/png', metadata: { width: 64, height: 32 } });
    expect(input).toMatchObject({ kind: 'image', mimeType: 'image/png', ref: expect.stringMatching(/^http:\/\/svc\.test\/blobs\/runs\/test-run\/.+\.png\?expires=\d+&signature=/) });

    const resized = await platformNode('image-resize').execute({ image: input, width: 16, height: 8, fit: 'fill' }, nodeContext(undefined, artifacts));
    const converted = await platformNode('image-convert').execute({ image: resized.image, format: 'webp' }, nodeContext(undefined, artifacts));
    const output = converted.image as { ref: string; mimeType: string; metadata: Record<string, unknown> };
    expect(output).toMatchObject({ kind: 'image', mimeType: 'image/webp', metadata: { width: 16, height: 8 } });

    const res = await request(app).get(output.ref.slice(BASE.length)).buffer(true).parse((r, done) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => done(null, Buffer.concat(chunks)));
    }).expect(200);
    expect(res.headers['content-type']).toBe('image/webp');
    const meta = await sharp(res.body as Buffer).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 16, 8]);
  });

  it('refuses refs it did not issue or that were tampered with, and says so', async () => {
    const ctx = nodeContext(undefined, artifacts);
    await expect(platformNode('image-metadata').execute({ image: { kind: 'image', ref: 'https://elsewhere.example/cat.png' } }, ctx)).rejects.toThrow('only files stored by this service');
    const good = await artifacts.put(Buffer.from('x'), { mimeType: 'image/png' });
    const tampered = good.ref!.replace(/signature=(.)/, (_m, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`);
    await expect(artifacts.read({ ...good, ref: tampered })).rejects.toThrow('the file URL is not valid');
  });
});
