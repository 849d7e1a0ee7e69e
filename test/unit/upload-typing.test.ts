import { sniffStream, storedNameOf } from '../../services/nodes';
import { AppError } from '../../services/platform/app-error';
import { limitedBytes, uploadTooLarge } from '../../services/api/handlers/upload-body';

async function* chunks(...parts: (string | Buffer | number[])[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.isBuffer(part) ? part : Array.isArray(part) ? Buffer.from(part) : Buffer.from(part, 'utf8');
}

async function drain(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of body) out.push(chunk);
  return Buffer.concat(out);
}

describe('typing an upload by its bytes', () => {
  it('recognises magic numbers whatever follows, and replays every byte', async () => {
    const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d];
    const sniffed = await sniffStream(chunks(png.slice(0, 3), png.slice(3), [0, 1, 2, 255]));
    expect(sniffed).toMatchObject({ mimeType: 'image/png', empty: false });
    expect([...(await drain(sniffed.body))]).toEqual([...png, 0, 1, 2, 255]);
    expect((await sniffStream(chunks([0x1a, 0x45, 0xdf, 0xa3, 1, 2]))).mimeType).toBe('video/webm');
    expect((await sniffStream(chunks('%PDF-1.7\n'))).mimeType).toBe('application/pdf');
  });

  it('takes UTF-8 text, a character split between chunks included', async () => {
    const euro = Buffer.from('€', 'utf8');
    const head = 'a'.repeat(5000);
    const sniffed = await sniffStream(chunks(head, euro.subarray(0, 1), euro.subarray(1), '\ttabs\r\n\x1b[0m'));
    expect(sniffed.mimeType).toBe('text/plain');
    expect((await drain(sniffed.body)).toString('utf8')).toBe(`${head}€\ttabs\r\n\x1b[0m`);
  });

  it('refuses a text file that turns binary, or ends inside a character, as it streams', async () => {
    const binary = await sniffStream(chunks('a'.repeat(5000), [0x00, 0x01]));
    expect(binary.mimeType).toBe('text/plain');
    await expect(drain(binary.body)).rejects.toMatchObject({ code: 'unsupported_media_type', message: expect.stringContaining('after its first 5000 bytes') });
    const cut = await sniffStream(chunks('a'.repeat(5000), Buffer.from('€', 'utf8').subarray(0, 2)));
    await expect(drain(cut.body)).rejects.toBeInstanceOf(AppError);
  });

  it('leaves unknown binary and empty files untyped', async () => {
    expect(await sniffStream(chunks([0x00, 0x01, 0x02]))).toMatchObject({ mimeType: null, empty: false });
    expect(await sniffStream(chunks([0xc3, 0x28]))).toMatchObject({ mimeType: null });
    expect(await sniffStream(chunks())).toMatchObject({ mimeType: null, empty: true });
  });
});

describe('the size limit of an upload', () => {
  const upload = (declaredBytes: number | null, ...parts: string[]) => ({ mediaType: '', declaredBytes, body: chunks(...parts) });

  it('refuses an announced size over the limit before reading, and a streamed one at the crossing chunk', async () => {
    let read = false;
    const announced = { mediaType: '', declaredBytes: 11, body: (async function* () { read = true; yield Buffer.from('x'); })() };
    await expect(drain(limitedBytes(announced, 10))).rejects.toMatchObject({ code: 'payload_too_large', message: expect.stringContaining('Content-Length announces 11 bytes, more than the limit of 10 bytes') });
    expect(read).toBe(false);
    await expect(drain(limitedBytes(upload(null, '123456', '78901'), 10))).rejects.toMatchObject({ code: 'payload_too_large' });
    expect((await drain(limitedBytes(upload(null, '12345', '67890'), 10))).toString()).toBe('1234567890');
  });

  it('names the limit in MiB when it is that large', () => {
    expect(uploadTooLarge(100 * 1024 * 1024).message).toContain('104857600 bytes (100 MiB)');
  });

  it('turns a body that breaks off into a 400', async () => {
    const broken = { mediaType: '', declaredBytes: null, body: (async function* () { yield Buffer.from('a'); throw new Error('aborted'); })() };
    await expect(drain(limitedBytes(broken, 10))).rejects.toMatchObject({ code: 'bad_request' });
  });
});

describe('the stored name of an upload', () => {
  it.each([
    ['photo.png', 'photo'],
    ['My photo (1).txt', 'My-photo-1'],
    ['résumé.pdf', 'resume'],
    ['.hidden', 'hidden'],
    ['archive.tar.gz', 'archive.tar'],
    ['写真.jpg', null],
    ['x'.repeat(300), 'x'.repeat(100)],
  ])('%s → %s', (filename, stored) => {
    expect(storedNameOf(filename)).toBe(stored);
  });
});
