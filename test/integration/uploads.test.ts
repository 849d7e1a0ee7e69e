import { gzipSync } from 'node:zlib';
import sharp from 'sharp';
import { ArtifactSchema, validate, type Artifact, type RunEvent, type Workflow } from '../../services/contract';
import { seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * `POST /v1/uploads` (docs/uploads.md): a local file stored as a run artifact of the caller's
 * organization, typed by its bytes, bounded by `UPLOAD_MAX_BYTES`, usable as a run input and
 * deleted by the retention sweeper with the run artifacts.
 */
describe('uploads', () => {
  let service: TestService;
  let png: Buffer;
  let jpeg: Buffer;

  /** A WAV header and a little silence: what `sniffMimeType` reads as audio/wav. */
  const wav = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(32)]);
  const pdf = Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n', 'latin1');
  const text = Buffer.from('héllo, world\nline two\n', 'utf8');

  beforeAll(async () => {
    png = await sharp({ create: { width: 5, height: 3, channels: 3, background: '#0a0' } }).png().toBuffer();
    jpeg = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#00f' } }).jpeg().toBuffer();
    service = await startTestService({ blobs: 's3' });
  });

  afterAll(async () => {
    await service?.close();
  });

  const upload = (body: Buffer | ReadableStream<Uint8Array>, options: { type?: string; query?: string; headers?: Record<string, string>; on?: TestService } = {}) => {
    const target = options.on ?? service;
    const headers = { ...(options.headers ?? bearer(target.account.token)), ...(options.type ? { 'Content-Type': options.type } : {}) };
    return fetch(`${target.url}/v1/uploads${options.query ?? ''}`, { method: 'POST', headers, body, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit);
  };

  async function uploaded(body: Buffer, options: Parameters<typeof upload>[1] = {}): Promise<Artifact> {
    const res = await upload(body, options);
    const answer = (await res.json()) as Artifact;
    expect({ status: res.status, answer }).toMatchObject({ status: 201 });
    expect(validate(ArtifactSchema, answer)).toMatchObject({ ok: true });
    return answer;
  }

  async function run(workflow: Workflow, inputs: Record<string, unknown>): Promise<RunEvent> {
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow, inputs }),
    });
    expect(res.status).toBe(200);
    const events = (await readSse(res)).slice(0, -1).map((m) => JSON.parse(m.data) as RunEvent);
    return events.at(-1)!;
  }

  const uploadRows = () => service.prisma.artifact.findMany({ where: { blobKey: { startsWith: `uploads/${service.account.orgId}/` } } });

  it('stores files of several types, typed by their bytes, as ref artifacts of the organization', async () => {
    const cases: [Buffer, string, string][] = [
      [png, 'image', 'image/png'],
      [jpeg, 'image', 'image/jpeg'],
      [wav, 'audio', 'audio/wav'],
      [pdf, 'file', 'application/pdf'],
      [text, 'file', 'text/plain'],
    ];
    for (const [bytes, kind, mimeType] of cases) {
      const artifact = await uploaded(bytes, { type: 'application/octet-stream' });
      expect(artifact).toEqual({ kind, mimeType, ref: expect.stringContaining(`/blobs/uploads/${service.account.orgId}/`) });
      const back = await fetch(artifact.ref!);
      expect(back.status).toBe(200);
      expect(back.headers.get('content-type')?.split(';')[0]).toBe(mimeType);
      expect(Buffer.from(await back.arrayBuffer())).toEqual(bytes);
    }
  });

  it('streams a file larger than one part of the blob store', async () => {
    // 20 MiB behind a PNG signature: the S3 driver sends it in 16 MiB parts.
    const big = Buffer.concat([png.subarray(0, 16), Buffer.alloc(20 * 1024 * 1024, 7)]);
    const artifact = await uploaded(big);
    expect(artifact).toMatchObject({ kind: 'image', mimeType: 'image/png' });
    const back = Buffer.from(await (await fetch(artifact.ref!)).arrayBuffer());
    expect(back.length).toBe(big.length);
    expect(back.equals(big)).toBe(true);
  });

  it('reads the type from the bytes, not from Content-Type or the file name, and keeps the name', async () => {
    const artifact = await uploaded(png, { type: 'text/plain', query: `?filename=${encodeURIComponent('My photo (1).txt')}` });
    expect(artifact).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { filename: 'My photo (1).txt' } });
    expect(new URL(artifact.ref!).pathname).toMatch(/\/My-photo-1\.png$/);

    // Text claimed to be an image is still text.
    expect(await uploaded(text, { type: 'image/png' })).toMatchObject({ kind: 'file', mimeType: 'text/plain' });
  });

  it('is described in the OpenAPI document: the body a file, the name in the query', async () => {
    const doc = (await (await fetch(`${service.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, any>> }; // eslint-disable-line @typescript-eslint/no-explicit-any
    const post = doc.paths['/v1/uploads']!.post;
    expect(post).toMatchObject({ operationId: 'uploads.create', 'x-scope': 'run', requestBody: { content: { '*/*': { schema: { format: 'binary' } } } } });
    expect(post.parameters).toEqual([expect.objectContaining({ name: 'filename', in: 'query', required: false })]);
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '413', '415']));
  });

  it('keeps an upload for the run artifacts\' retention: its URL and its record expire together', async () => {
    const artifact = await uploaded(png);
    const expires = Number(new URL(artifact.ref!).searchParams.get('expires')) * 1000;
    const retention = service.config.artifactRetentionDays * 86_400_000;
    expect(Math.abs(expires - (Date.now() + retention))).toBeLessThan(60_000);
    const key = decodeURIComponent(new URL(artifact.ref!).pathname.replace(/^\/blobs\//, ''));
    const row = await service.prisma.artifact.findUniqueOrThrow({ where: { blobKey: key } });
    expect(row).toMatchObject({ runId: null, mimeType: 'image/png', sizeBytes: BigInt(png.length), deletedAt: null });
    expect(row.expiresAt!.getTime()).toBe(expires);
  });

  it('refuses what it cannot take, each with a message saying what to do, and stores nothing', async () => {
    const before = (await uploadRows()).length;
    const refused = async (res: Response, status: number, code: string, says: RegExp) => {
      const body = (await res.json()) as { code: string; error: string };
      expect({ status: res.status, code: body.code }).toEqual({ status, code });
      expect(body.error).toMatch(says);
    };
    await refused(await upload(Buffer.alloc(0)), 400, 'bad_request', /empty: send the file's bytes/);
    await refused(await upload(Buffer.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0xff])), 415, 'unsupported_media_type', /PNG, JPEG.*read from the bytes/);
    // Text for its first 512 KiB (far past the bytes the type is decided on), then binary:
    // refused as it streams by, nothing kept.
    await refused(await upload(Buffer.concat([Buffer.alloc(512 * 1024, 'a'), Buffer.from([0, 0, 0, 0])])), 415, 'unsupported_media_type', /starts as UTF-8 text but is not text/);
    await refused(await upload(gzipSync(text), { headers: { ...bearer(service.account.token), 'Content-Encoding': 'gzip' } }), 415, 'unsupported_media_type', /without Content-Encoding/);
    await refused(await upload(png, { query: '?filename=..%2Fetc%2Fpasswd' }), 400, 'validation_failed', /plain file name/);
    await refused(await upload(png, { query: '?name=x.png' }), 400, 'validation_failed', /unknown field "name"/);
    await refused(await upload(png, { headers: {} }), 401, 'unauthorized', /Authorization: Bearer/);
    const reader = await seedAccount(service.prisma, { slug: 'reader', scopes: ['read'] });
    await refused(await upload(png, { headers: bearer(reader.token) }), 403, 'insufficient_scope', /"run" scope/);
    expect((await uploadRows()).length).toBe(before);
  });

  it('refuses a file over UPLOAD_MAX_BYTES, announced or streamed, naming the limit', async () => {
    const small = await startTestService({ env: { UPLOAD_MAX_BYTES: '1000' } });
    try {
      const rows = () => small.prisma.artifact.count({ where: { blobKey: { startsWith: 'uploads/' } } });
      const announced = await upload(Buffer.alloc(5000, 'a'), { on: small });
      expect(announced.status).toBe(413);
      expect(await announced.json()).toMatchObject({ code: 'payload_too_large', limitBytes: 1000, error: expect.stringMatching(/Content-Length announces 5000 bytes, more than the limit of 1000 bytes/) });

      // Chunked, without Content-Length: refused at the chunk that crosses the limit.
      const chunks = [Buffer.alloc(600, 'a'), Buffer.alloc(600, 'b')];
      const streamed = await upload(new ReadableStream({ pull: (c) => (chunks.length ? c.enqueue(chunks.shift()!) : c.close()) }), { on: small });
      expect(streamed.status).toBe(413);
      expect(await streamed.json()).toMatchObject({ code: 'payload_too_large', error: expect.stringMatching(/larger than the limit of 1000 bytes/) });
      expect(await rows()).toBe(0);

      // At the limit exactly, it is taken.
      expect((await upload(Buffer.alloc(1000, 'c'), { on: small })).status).toBe(201);
    } finally {
      await small.close();
    }
  });

  it('hands back a URL a run of the organization takes as its input', async () => {
    const picture = await uploaded(png, { type: 'application/octet-stream', query: '?filename=shot.png' });
    const measure: Workflow = {
      version: 2,
      nodes: [
        { id: 'picture', uses: 'input', outputType: 'IMAGE' },
        { id: 'size', uses: 'image-metadata', inputs: { image: '${picture.value}' } },
        { id: 'width', uses: 'output', inputs: { value: '${size.width}' } },
        { id: 'format', uses: 'output', inputs: { value: '${size.metadata}' } },
      ],
    };
    const measured = await run(measure, { picture });
    expect(measured).toMatchObject({ type: 'run.completed', outputs: { width: { value: 5 }, format: { value: { format: 'png', height: 3 } } } });

    const document = await uploaded(text, { query: '?filename=notes.txt' });
    const echo: Workflow = {
      version: 2,
      nodes: [
        { id: 'document', uses: 'input', outputType: 'FILE' },
        { id: 'same', uses: 'output', inputs: { value: '${document.value}' } },
      ],
    };
    const echoed = await run(echo, { document });
    expect(echoed).toMatchObject({ type: 'run.completed', outputs: { same: { kind: 'file', mimeType: 'text/plain' } } });
    const out = (echoed as Extract<RunEvent, { type: 'run.completed' }>).outputs.same!;
    expect(Buffer.from(await (await fetch(out.ref!)).arrayBuffer())).toEqual(text);
  });

  it('is deleted by the retention sweeper once the run artifacts\' retention has passed', async () => {
    const artifact = await uploaded(png);
    const kept = await uploaded(text);
    const keyOf = (a: Artifact) => new URL(a.ref!).pathname.replace(/^\/blobs\//, '');
    await service.prisma.artifact.update({ where: { blobKey: keyOf(artifact) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await service.runtime.sweeper!.sweepOnce()).deleted).toBeGreaterThanOrEqual(1);
    expect((await fetch(artifact.ref!)).status).toBe(404);
    expect((await service.prisma.artifact.findUniqueOrThrow({ where: { blobKey: keyOf(artifact) } })).deletedAt).not.toBeNull();
    expect((await fetch(kept.ref!)).status).toBe(200);

    // A run given the deleted upload fails, saying the file is gone.
    const measure: Workflow = {
      version: 2,
      nodes: [
        { id: 'picture', uses: 'input', outputType: 'IMAGE' },
        { id: 'size', uses: 'image-metadata', inputs: { image: '${picture.value}' } },
        { id: 'width', uses: 'output', inputs: { value: '${size.width}' } },
      ],
    };
    expect(await run(measure, { picture: artifact })).toMatchObject({ type: 'run.failed' });
  });
});
