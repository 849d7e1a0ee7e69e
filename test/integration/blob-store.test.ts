import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import {
  BlobNotFoundError,
  BlobSizeMismatchError,
  FsBlobStore,
  InvalidBlobKeyError,
  InvalidContentTypeError,
  S3BlobStore,
  type BlobStore,
} from '../../services/blobs';
import { stack, uniqueName } from '../support/stack';

interface Driver {
  name: string;
  make(): Promise<BlobStore>;
  /** Whether the driver has native presigned URLs. */
  presigns: boolean;
}

const drivers: Driver[] = [
  {
    name: 'filesystem',
    presigns: false,
    make: async () => {
      const store = new FsBlobStore(path.join(stack().tmpDir, uniqueName('fs-blobs')));
      await store.init();
      return store;
    },
  },
  {
    name: 's3 (Ceph RGW)',
    presigns: true,
    make: async () => {
      // A bucket of its own, which init() creates: the driver's bucket set-up is tested too.
      const store = new S3BlobStore({ ...stack().s3, bucket: uniqueName('blobs') });
      await store.init();
      await store.init();
      return store;
    },
  },
];

const bytesOf = async (store: BlobStore, key: string) => buffer((await store.get(key)).body);
const MB = 1024 * 1024;

describe.each(drivers)('blob store, $name driver', ({ make, presigns }) => {
  let store: BlobStore;
  beforeAll(async () => {
    store = await make();
  });

  it('round-trips binary bytes with their content type and size', async () => {
    const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(70_000)]);
    const info = { key: 'runs/r1/out.bin', size: bytes.length, contentType: 'application/octet-stream' };
    expect(await store.put('runs/r1/out.bin', bytes, { contentType: 'application/octet-stream' })).toEqual(info);
    expect(await store.stat('runs/r1/out.bin')).toEqual(info);
    const blob = await store.get('runs/r1/out.bin');
    expect({ key: blob.key, size: blob.size, contentType: blob.contentType }).toEqual(info);
    expect((await buffer(blob.body)).equals(bytes)).toBe(true);
  });

  it('stores an empty blob', async () => {
    expect(await store.put('empty.txt', Buffer.alloc(0), { contentType: 'text/plain; charset=utf-8' })).toEqual({ key: 'empty.txt', size: 0, contentType: 'text/plain; charset=utf-8' });
    expect((await bytesOf(store, 'empty.txt')).length).toBe(0);
    expect((await store.stat('empty.txt'))?.contentType).toBe('text/plain; charset=utf-8');
  });

  it('stores a streamed upload of several megabytes, with or without its size announced', async () => {
    const parts = Array.from({ length: 6 }, () => randomBytes(MB));
    const whole = Buffer.concat(parts);
    expect((await store.put('big/sized.bin', Readable.from(parts), { contentType: 'video/mp4', size: 6 * MB })).size).toBe(6 * MB);
    expect((await store.put('big/unsized.bin', Readable.from(parts), { contentType: 'video/mp4' })).size).toBe(6 * MB);
    for (const key of ['big/sized.bin', 'big/unsized.bin']) {
      expect((await store.stat(key))?.size).toBe(6 * MB);
      expect((await bytesOf(store, key)).equals(whole)).toBe(true);
    }
  });

  it('stores a stream larger than one upload part, and keeps the old blob when such a stream fails midway', async () => {
    const chunk = randomBytes(MB);
    const parts = Array.from({ length: 40 }, (_, i) => Buffer.concat([Buffer.from([i]), chunk.subarray(1)]));
    expect((await store.put('big/parts.bin', Readable.from(parts), { contentType: 'application/octet-stream' })).size).toBe(40 * MB);
    expect((await bytesOf(store, 'big/parts.bin')).equals(Buffer.concat(parts))).toBe(true);

    async function* failsAfter30MB() {
      for (let i = 0; i < 30; i++) yield chunk;
      throw new Error('source broke late');
    }
    await expect(store.put('big/parts.bin', Readable.from(failsAfter30MB()), { contentType: 'text/plain' })).rejects.toThrow('source broke late');
    expect(await store.stat('big/parts.bin')).toEqual({ key: 'big/parts.bin', size: 40 * MB, contentType: 'application/octet-stream' });
  });

  it('reports a missing key: null from stat, BlobNotFoundError (not_found) from get', async () => {
    expect(await store.stat('never/written.png')).toBeNull();
    const err = await store.get('never/written.png').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobNotFoundError);
    expect(err).toMatchObject({ code: 'not_found', key: 'never/written.png' });
  });

  it('overwrites a blob, bytes and content type together', async () => {
    await store.put('k.txt', Buffer.from('one'), { contentType: 'text/plain' });
    await store.put('k.txt', Buffer.from('two!'), { contentType: 'text/markdown' });
    const blob = await store.get('k.txt');
    expect([blob.size, blob.contentType, (await buffer(blob.body)).toString()]).toEqual([4, 'text/markdown', 'two!']);
  });

  it('lets a reader that already opened a blob finish it while the blob is overwritten', async () => {
    const before = randomBytes(MB);
    await store.put('busy.bin', before, { contentType: 'application/octet-stream' });
    const reading = await store.get('busy.bin');
    await store.put('busy.bin', randomBytes(2 * MB), { contentType: 'application/octet-stream' });
    expect((await buffer(reading.body)).equals(before)).toBe(true);
    expect((await store.stat('busy.bin'))?.size).toBe(2 * MB);
  });

  it('keeps a key and the keys below it apart, as S3 does', async () => {
    await store.put('tree', Buffer.from('leaf'), { contentType: 'text/plain' });
    await store.put('tree/child', Buffer.from('child'), { contentType: 'text/plain' });
    expect((await bytesOf(store, 'tree')).toString()).toBe('leaf');
    expect((await bytesOf(store, 'tree/child')).toString()).toBe('child');
  });

  it('deletes idempotently', async () => {
    await store.put('gone.txt', Buffer.from('x'), { contentType: 'text/plain' });
    await store.delete('gone.txt');
    await store.delete('gone.txt');
    await store.delete('never/there.txt');
    expect(await store.stat('gone.txt')).toBeNull();
    await expect(store.get('gone.txt')).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it('refuses a body whose length differs from the announced size, keeping the old blob', async () => {
    await store.put('sized.txt', Buffer.from('original'), { contentType: 'text/plain' });
    await expect(store.put('sized.txt', Readable.from([Buffer.from('longer than announced')]), { contentType: 'text/plain', size: 5 })).rejects.toBeInstanceOf(BlobSizeMismatchError);
    await expect(store.put('sized.txt', Readable.from([Buffer.from('short')]), { contentType: 'text/plain', size: 50 })).rejects.toBeInstanceOf(BlobSizeMismatchError);
    await expect(store.put('sized.txt', Buffer.from('abc'), { contentType: 'text/plain', size: 4 })).rejects.toBeInstanceOf(BlobSizeMismatchError);
    expect((await bytesOf(store, 'sized.txt')).toString()).toBe('original');
  });

  it('fails the put when the source stream fails, storing nothing', async () => {
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('source broke'));
      },
    });
    await expect(store.put('broken.bin', failing, { contentType: 'application/octet-stream' })).rejects.toThrow('source broke');
    expect(await store.stat('broken.bin')).toBeNull();
  });

  const badKeys = ['../etc/passwd', 'a/../../b', '/abs', 'a//b', 'a/./b', 'trailing/', 'spaces here', 'ünïcode', 'a?b', ''].map((key) => ({ key, label: JSON.stringify(key) }));
  it.each([...badKeys, { key: 'x'.repeat(513), label: 'of 513 characters' }])(
    'rejects the key $label in every method',
    async ({ key }) => {
      const options = { contentType: 'text/plain' };
      await expect(store.put(key, Buffer.from('x'), options)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.get(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.stat(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.presignGet(key, 60)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    },
  );

  it.each(['', 'png', 'text/plain\r\nX-Injected: 1', 'a/b/c'])('rejects the content type %j', async (contentType) => {
    await expect(store.put('typed.bin', Buffer.from('x'), { contentType })).rejects.toBeInstanceOf(InvalidContentTypeError);
    expect(await store.stat('typed.bin')).toBeNull();
  });

  if (presigns) {
    it('gives a presigned GET that the server honours, and refuses with 403 once tampered with', async () => {
      await store.put('p/hello.txt', Buffer.from('hello s3'), { contentType: 'text/plain' });
      const url = (await store.presignGet('p/hello.txt', 60))!;
      const ok = await fetch(url);
      expect([ok.status, ok.headers.get('content-type'), await ok.text()]).toEqual([200, 'text/plain', 'hello s3']);
      const tampered = url.replace(/X-Amz-Signature=([0-9a-f])/, (_m, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`);
      expect(tampered).not.toBe(url);
      const refused = await fetch(tampered);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain('SignatureDoesNotMatch');
    });
  } else {
    it('has no native presigned URLs (null)', async () => {
      await store.put('p/hello.txt', Buffer.from('hi'), { contentType: 'text/plain' });
      expect(await store.presignGet('p/hello.txt', 60)).toBeNull();
    });
  }
});

describe('filesystem blob store housekeeping', () => {
  it('removes temporary files a crashed writer left behind, and only old ones', async () => {
    const root = path.join(stack().tmpDir, uniqueName('fs-tmp'));
    const store = new FsBlobStore(root);
    await store.init();
    const old = path.join(root, 'tmp', 'left-by-a-crash');
    const fresh = path.join(root, 'tmp', 'being-written');
    fs.writeFileSync(old, 'x');
    fs.writeFileSync(fresh, 'y');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(old, twoHoursAgo, twoHoursAgo);
    await store.init();
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.existsSync(fresh)).toBe(true);
  });

  it('works without init(), creating its directories on the first put', async () => {
    const store = new FsBlobStore(path.join(stack().tmpDir, uniqueName('fs-lazy')));
    await store.put('a/b.txt', Buffer.from('lazy'), { contentType: 'text/plain' });
    expect((await bytesOf(store, 'a/b.txt')).toString()).toBe('lazy');
  });
});

describe('S3 blob store configuration', () => {
  it('accepts the endpoint as a bare host with port and useSSL', async () => {
    const { host, port, accessKey, secretKey, bucket } = stack().s3;
    const store = new S3BlobStore({ endpoint: host, port, useSSL: false, accessKey, secretKey, bucket });
    await store.put(`${uniqueName('host-form')}.txt`, Buffer.from('x'), { contentType: 'text/plain' });
  });

  it('surfaces wrong credentials as an error, not as a missing blob', async () => {
    const store = new S3BlobStore({ ...stack().s3, secretKey: 'not-the-secret' });
    await expect(store.stat('anything')).rejects.toThrow(/signature|credentials|denied/i);
  });
});
