import path from 'node:path';
import express from 'express';
import request from 'supertest';
import { createBlobRouter } from '../../services/api/routes/blob-route';
import { errorHandler } from '../../services/api/http/error-handler';
import { BlobUrlSigner, FsBlobStore, S3BlobStore, type BlobStore } from '../../services/blobs';
import { createLogger } from '../../services/platform/logger';
import { stack, uniqueName } from '../support/stack';

const drivers: [string, () => Promise<BlobStore>][] = [
  ['filesystem', async () => new FsBlobStore(path.join(stack().tmpDir, uniqueName('route-blobs')))],
  [
    's3 (Ceph RGW)',
    async () => {
      const store = new S3BlobStore({ ...stack().s3, bucket: uniqueName('route-blobs') });
      await store.init();
      return store;
    },
  ],
];

describe.each(drivers)('GET /blobs/* — the service’s own signed blob URLs, %s driver', (_name, makeStore) => {
  const base = 'http://svc.test/api';
  const signer = new BlobUrlSigner({ publicBaseUrl: base, secret: 'x'.repeat(40) });
  let store: BlobStore;
  let app: express.Express;
  const pathOf = (url: string) => url.slice(base.length);
  const inAMinute = () => new Date(Date.now() + 60_000);

  beforeAll(async () => {
    store = await makeStore();
    app = express();
    app.use(createBlobRouter({ store, signer, workflowLive: async () => true }));
    app.use(errorHandler(createLogger({ level: 'silent' })));
    await store.put('runs/r9/image.png', Buffer.from('PNGDATA'), { contentType: 'image/png' });
  });

  it('streams the blob for a valid URL, with its type, length and safety headers', async () => {
    const res = await request(app).get(pathOf(signer.sign('runs/r9/image.png', inAMinute()))).buffer(true).expect(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['content-length']).toBe('7');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain('sandbox');
    expect(Buffer.from(res.body as Buffer).toString()).toBe('PNGDATA');
    expect(res.headers['accept-ranges']).toBe('bytes');
  });

  it.each([
    ['bytes=2-4', 'bytes 2-4/7', 'GDA'],
    ['bytes=3-', 'bytes 3-6/7', 'DATA'],
    ['bytes=-2', 'bytes 5-6/7', 'TA'],
    ['bytes=5-100', 'bytes 5-6/7', 'TA'],
    ['bytes=-50', 'bytes 0-6/7', 'PNGDATA'],
    ['bytes=0-0', 'bytes 0-0/7', 'P'],
  ])('answers Range %s with 206, Content-Range %s and those bytes', async (range, contentRange, bytes) => {
    const res = await request(app).get(pathOf(signer.sign('runs/r9/image.png', inAMinute()))).set('Range', range).buffer(true).expect(206);
    expect(res.headers['content-range']).toBe(contentRange);
    expect(res.headers['content-length']).toBe(String(bytes.length));
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(Buffer.from(res.body as Buffer).toString()).toBe(bytes);
  });

  it.each(['bytes=7-', 'bytes=100-200', 'bytes=-0'])('answers the unsatisfiable Range %s with 416 and Content-Range bytes */7', async (range) => {
    const res = await request(app).get(pathOf(signer.sign('runs/r9/image.png', inAMinute()))).set('Range', range).expect(416);
    expect(res.headers['content-range']).toBe('bytes */7');
    expect(res.body).toEqual({ code: 'range_not_satisfiable', error: expect.stringContaining('7 bytes long') });
  });

  it.each([
    ['several ranges', { Range: 'bytes=0-1,4-5' }],
    ['another unit', { Range: 'items=0-1' }],
    ['a malformed range', { Range: 'bytes=4-2' }],
    ['If-Range (no validator to compare)', { Range: 'bytes=0-1', 'If-Range': 'Wed, 21 Oct 2015 07:28:00 GMT' }],
  ])('answers %s with the whole blob, 200', async (_what, headers) => {
    const res = await request(app).get(pathOf(signer.sign('runs/r9/image.png', inAMinute()))).set(headers).buffer(true).expect(200);
    expect(res.headers['content-range']).toBeUndefined();
    expect(Buffer.from(res.body as Buffer).toString()).toBe('PNGDATA');
  });

  it('lets a cached copy live no longer than the URL', async () => {
    const res = await request(app).get(pathOf(signer.sign('runs/r9/image.png', new Date(Date.now() + 30_000)))).expect(200);
    const maxAge = Number(/max-age=(\d+)/.exec(res.headers['cache-control'])?.[1]);
    expect(maxAge).toBeGreaterThan(25);
    expect(maxAge).toBeLessThanOrEqual(30);
    expect(res.headers['cache-control']).toContain('private');
  });

  it('answers HEAD with the headers and no body', async () => {
    const res = await request(app).head(pathOf(signer.sign('runs/r9/image.png', inAMinute()))).expect(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['content-length']).toBe('7');
    expect(res.text ?? '').toBe('');
  });

  it('refuses an expired URL with 403 saying so', async () => {
    const res = await request(app).get(pathOf(signer.sign('runs/r9/image.png', new Date(Date.now() - 1000)))).expect(403);
    expect(res.body).toEqual({ code: 'forbidden', error: expect.stringContaining('has expired') });
  });

  it('refuses a tampered signature, a moved expiry and another key with 403 saying the signature does not match', async () => {
    const url = new URL(signer.sign('runs/r9/image.png', inAMinute()));
    const signature = url.searchParams.get('signature')!;
    const flipped = new URL(url);
    flipped.searchParams.set('signature', (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1));
    const later = new URL(url);
    later.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    const otherKey = pathOf(url.href).replace('image.png', 'other.png');
    for (const target of [pathOf(flipped.href), pathOf(later.href), otherKey]) {
      const res = await request(app).get(target).expect(403);
      expect(res.body.error).toContain('signature does not match');
    }
  });

  it('refuses missing and malformed parameters with 403 naming them', async () => {
    expect((await request(app).get('/blobs/runs/r9/image.png').expect(403)).body.error).toContain('lacks its "expires" and "signature"');
    expect((await request(app).get('/blobs/runs/r9/image.png?expires=123').expect(403)).body.error).toContain('lacks');
    expect((await request(app).get('/blobs/runs/r9/image.png?expires=soon&signature=abc').expect(403)).body.error).toContain('not a time in unix seconds');
  });

  it('answers 404 in JSON for a validly signed URL whose blob is gone, on GET and HEAD', async () => {
    const url = pathOf(signer.sign('runs/r9/gone.png', inAMinute()));
    expect((await request(app).get(url).expect(404)).body).toEqual({ code: 'not_found', error: expect.stringContaining('no longer exists') });
    await request(app).head(url).expect(404);
  });
});
