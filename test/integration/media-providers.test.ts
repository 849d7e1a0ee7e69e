import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { BlobUrlSigner, FsBlobStore } from '../../services/blobs';
import type { Artifact } from '../../services/contract';
import { BlobArtifactStore, createInputFetcher, mediaProviderNodes, type MediaProviderSettings, type NodeDefinition } from '../../services/nodes';
import { AppError } from '../../services/platform/app-error';
import { eventually } from '../support/eventually';
import { nodeContext } from '../support/node-harness';
import { bearer, startTestService } from '../support/service';
import { silentWav } from '../support/wav';

/** One request as a fake provider saw it. */
interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

type Handler = (req: Seen, res: http.ServerResponse, base: string) => unknown;

/** A local server standing in for a provider; it records every request it gets. */
async function fakeProvider(handler: Handler) {
  const seen: Seen[] = [];
  let base = '';
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(entry);
      void Promise.resolve(handler(entry, res, base)).catch((err: Error) => res.writeHead(500).end(err.message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

const OPENAI_KEY = 'sk-test-openai-0123456789abcdef';
const FAL_KEY = 'fal-test-key-0123456789abcdef';
const REPLICATE_TOKEN = 'r8_test_token_0123456789abcdef';
const BASE = 'http://svc.test';

function settings(overrides: Partial<MediaProviderSettings> = {}): MediaProviderSettings {
  return {
    openaiApiKey: OPENAI_KEY,
    openaiBaseUrl: 'http://127.0.0.1:9/v1',
    providerTimeoutMs: 5000,
    providerPollMs: 10,
    openaiImagePrices: { 'gpt-image-1': 40000, 'dall-e-3': 80000 },
    openaiEmbeddingPrices: { 'text-embedding-3-small': 20000 },
    openaiTtsPrices: { 'tts-1': 15_000_000 },
    openaiTtsVoices: ['alloy', 'nova'],
    openaiTranscribePrices: { 'whisper-1': 6000 },
    falKey: '',
    falBaseUrl: 'http://127.0.0.1:9',
    falApps: { 'fal-ai/flux/schnell': 3000 },
    replicateApiToken: '',
    replicateBaseUrl: 'http://127.0.0.1:9',
    replicateModels: { 'black-forest-labs/flux-schnell': 3000 },
    ...overrides,
  };
}

function nodeOf(nodes: NodeDefinition[], id: string): NodeDefinition {
  const node = nodes.find((n) => n.spec.id === id);
  if (!node) throw new Error(`no node ${id} among ${nodes.map((n) => n.spec.id).join(', ')}`);
  return node;
}

const png = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#08f' } }).png().toBuffer();


let artifacts: BlobArtifactStore;
beforeAll(() => {
  const store = new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-media-providers-')));
  const signer = new BlobUrlSigner({ publicBaseUrl: BASE, secret: 'k'.repeat(40) });
  artifacts = new BlobArtifactStore({ store, signer, publicBaseUrl: BASE, keyPrefix: 'runs/media-test', urlTtlSeconds: 600 });
});

const ours = (artifact: unknown) => expect((artifact as Artifact).ref).toMatch(/^http:\/\/svc\.test\/blobs\/runs\/media-test\//);

describe('the media provider catalog', () => {
  it('leaves out every provider without a key, and each OpenAI capability without a price list', () => {
    expect(mediaProviderNodes(settings({ openaiApiKey: '' }))).toEqual([]);
    const ids = (s: Partial<MediaProviderSettings>) => mediaProviderNodes(settings(s)).map((n) => n.spec.id);
    expect(ids({})).toEqual(['openai-image', 'openai-embed', 'openai-speech', 'openai-transcribe']);
    expect(ids({ openaiTtsPrices: {}, falKey: FAL_KEY, replicateApiToken: REPLICATE_TOKEN })).toEqual(['openai-image', 'openai-embed', 'openai-transcribe', 'fal-image', 'replicate-image']);
  });
});

describe('OpenAI-compatible media nodes against a local fake', () => {
  let fake: Awaited<ReturnType<typeof fakeProvider>>;
  let nodes: NodeDefinition[];
  let image: Buffer;
  const routes = new Map<string, Handler>();

  beforeAll(async () => {
    image = await png(48, 32);
    fake = await fakeProvider((req, res, base) => {
      const route = routes.get(`${req.method} ${req.path}`);
      if (route) return route(req, res, base);
      json(res, 404, { error: { message: `no route ${req.path}`, type: 'invalid_request_error' } });
    });
    nodes = mediaProviderNodes(settings({ openaiBaseUrl: `${fake.base}/v1` }));
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.seen.length = 0;
    routes.clear();
  });

  it('generates images from b64_json, stores them as our refs with their size, and prices per image', async () => {
    routes.set('POST /v1/images/generations', (_req, res) => json(res, 200, { created: 1, data: [{ b64_json: image.toString('base64') }, { b64_json: image.toString('base64') }], usage: { total_tokens: 10 } }));
    const node = nodeOf(nodes, 'openai-image');
    const inputs = { prompt: 'a blue square', n: 2, size: '1024x1024' };
    expect(node.estimate(inputs)).toBe(80000);
    const outputs = await node.execute(inputs, nodeContext(undefined, artifacts));
    expect(fake.seen[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(JSON.parse(fake.seen[0]!.body.toString())).toEqual({ model: 'gpt-image-1', prompt: 'a blue square', n: 2, size: '1024x1024' });
    const images = outputs.images as Artifact[];
    expect(images).toHaveLength(2);
    expect(outputs.image).toEqual(images[0]);
    expect(images[0]).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 48, height: 32 } });
    ours(images[0]);
    expect((await artifacts.read(images[1]!)).bytes.equals(image)).toBe(true);
    expect(node.price(inputs, outputs)).toBe(80000);
  });

  it('downloads an image a compatible server links to and re-hosts it: the provider URL appears nowhere', async () => {
    routes.set('POST /v1/images/generations', (_req, res, base) => json(res, 200, { data: [{ url: `${base}/files/img-1.png?sig=abc` }] }));
    routes.set('GET /files/img-1.png?sig=abc', (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(image));
    const node = nodeOf(nodes, 'openai-image');
    const outputs = await node.execute({ prompt: 'p', model: 'dall-e-3' }, nodeContext(undefined, artifacts));
    expect(JSON.parse(fake.seen[0]!.body.toString())).toMatchObject({ model: 'dall-e-3', response_format: 'b64_json' });
    // The file host gets no key.
    expect(fake.seen[1]!.headers.authorization).toBeUndefined();
    ours(outputs.image);
    expect(JSON.stringify(outputs)).not.toContain(fake.base);
    expect(JSON.stringify(outputs)).not.toContain('127.0.0.1');
  });

  it('retries a 429 after its Retry-After, then maps a 401 to unavailable without leaking the key', async () => {
    let calls = 0;
    routes.set('POST /v1/images/generations', (_req, res) => {
      calls += 1;
      if (calls === 1) return json(res, 429, { error: { message: 'Rate limit reached', type: 'requests' } }, { 'retry-after': '0.05' });
      json(res, 200, { data: [{ b64_json: image.toString('base64') }] });
    });
    const node = nodeOf(nodes, 'openai-image');
    const started = Date.now();
    await node.execute({ prompt: 'p' }, nodeContext(undefined, artifacts));
    expect(calls).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);

    routes.set('POST /v1/images/generations', (_req, res) => json(res, 401, { error: { message: `Incorrect API key provided: ${OPENAI_KEY}.`, type: 'invalid_request_error', code: 'invalid_api_key' } }));
    const failure = await node.execute({ prompt: 'p' }, nodeContext(undefined, artifacts)).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(AppError);
    expect(failure).toMatchObject({ code: 'unavailable', message: expect.stringContaining('Incorrect API key provided') });
    expect((failure as Error).message).not.toContain(OPENAI_KEY);

    routes.set('POST /v1/images/generations', (_req, res) => json(res, 400, { error: { message: 'Your request was rejected by the safety system.', type: 'image_generation_user_error' } }));
    await expect(node.execute({ prompt: 'p' }, nodeContext(undefined, artifacts))).rejects.toMatchObject({ code: 'bad_request', message: expect.stringContaining('safety system') });
  });

  it('aborts the image request when the run aborts', async () => {
    let closed = false;
    routes.set('POST /v1/images/generations', (_req, res) => {
      res.on('close', () => (closed = true));
    });
    const controller = new AbortController();
    const running = nodeOf(nodes, 'openai-image').execute({ prompt: 'p' }, nodeContext(controller.signal, artifacts));
    await eventually(() => fake.seen.length === 1);
    controller.abort(new Error('run cancelled'));
    await expect(running).rejects.toThrow('run cancelled');
    await eventually(() => closed);
  });

  it('embeds text and charges the tokens the provider reports (the reserve is one token per byte)', async () => {
    routes.set('POST /v1/embeddings', (_req, res) => json(res, 200, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2, 0.3] }], model: 'text-embedding-3-small', usage: { prompt_tokens: 3, total_tokens: 3 } }));
    const node = nodeOf(nodes, 'openai-embed');
    const inputs = { text: 'hello embedding world', dimensions: 3 };
    expect(node.estimate(inputs)).toBe(Math.ceil((21 * 20000) / 1e6));
    const outputs = await node.execute(inputs, nodeContext());
    expect(outputs).toEqual({ embedding: [0.1, -0.2, 0.3], tokens: 3 });
    expect(fake.seen[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(JSON.parse(fake.seen[0]!.body.toString())).toEqual({ model: 'text-embedding-3-small', input: 'hello embedding world', encoding_format: 'float', dimensions: 3 });
    expect(node.price(inputs, outputs)).toBe(1);
  });

  it('speaks text into an audio artifact of ours, priced per character', async () => {
    const mp3 = Buffer.concat([Buffer.from('ID3'), Buffer.alloc(500, 7)]);
    routes.set('POST /v1/audio/speech', (_req, res) => res.writeHead(200, { 'content-type': 'audio/mpeg', 'transfer-encoding': 'chunked' }).end(mp3));
    const node = nodeOf(nodes, 'openai-speech');
    const inputs = { text: 'Hello there.', voice: 'nova' };
    const outputs = await node.execute(inputs, nodeContext(undefined, artifacts));
    expect(JSON.parse(fake.seen[0]!.body.toString())).toEqual({ model: 'tts-1', input: 'Hello there.', voice: 'nova', response_format: 'mp3' });
    expect(outputs.audio).toMatchObject({ kind: 'audio', mimeType: 'audio/mpeg' });
    ours(outputs.audio);
    expect((await artifacts.read(outputs.audio as Artifact)).bytes.equals(mp3)).toBe(true);
    expect(node.estimate(inputs)).toBe(Math.ceil((12 * 15_000_000) / 1e6));
    expect(node.price(inputs, outputs)).toBe(node.estimate(inputs));
  });

  it('transcribes audio sent as multipart/form-data, charged by the reported duration', async () => {
    routes.set('POST /v1/audio/transcriptions', (_req, res) => json(res, 200, { task: 'transcribe', language: 'english', duration: 2, text: 'hello from the fake' }));
    const audio = await artifacts.put(silentWav(16000), { mimeType: 'audio/wav' });
    const node = nodeOf(nodes, 'openai-transcribe');
    const inputs = { audio, language: 'en', max_seconds: 60 };
    expect(node.estimate(inputs)).toBe(6000);
    const outputs = await node.execute(inputs, nodeContext(undefined, artifacts));
    expect(outputs).toEqual({ text: 'hello from the fake', seconds: 2 });
    expect(node.price(inputs, outputs)).toBe(200);

    const sent = fake.seen[0]!;
    expect(sent.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const form = await new Request('http://x/', { method: 'POST', headers: { 'content-type': sent.headers['content-type']! }, body: sent.body }).formData();
    expect(form.get('model')).toBe('whisper-1');
    expect(form.get('response_format')).toBe('verbose_json');
    expect(form.get('language')).toBe('en');
    const file = form.get('file') as File;
    expect(file.name).toBe('audio.wav');
    expect(Buffer.from(await file.arrayBuffer()).equals(silentWav(16000))).toBe(true);
  });

  it('refuses audio known to be longer than max_seconds before sending anything', async () => {
    const audio = await artifacts.put(silentWav(24000), { mimeType: 'audio/wav' });
    await expect(nodeOf(nodes, 'openai-transcribe').execute({ audio, max_seconds: 2 }, nodeContext(undefined, artifacts))).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('3 seconds long'),
    });
    expect(fake.seen).toHaveLength(0);
  });
});

describe('fal queue node against a local fake', () => {
  let fake: Awaited<ReturnType<typeof fakeProvider>>;
  let image: Buffer;
  let polls = 0;
  let finishAfter = 2;
  /** The status URL answers 500 (fal failing after it accepted the job). */
  let statusFails = false;
  /** Where the fake's result links point: its own origin, unless a test moves its "CDN" elsewhere. */
  let cdnBase: string | undefined;

  beforeAll(async () => {
    image = await png(20, 10);
    fake = await fakeProvider((req, res, base) => {
      const app = 'fal-ai/flux';
      if (req.method === 'POST' && req.path === '/fal-ai/flux/schnell') {
        const id = `req-${fake.seen.length}`;
        return json(res, 200, {
          request_id: id,
          response_url: `${base}/${app}/requests/${id}`,
          status_url: `${base}/${app}/requests/${id}/status`,
          cancel_url: `${base}/${app}/requests/${id}/cancel`,
          queue_position: 0,
        });
      }
      if (req.method === 'GET' && req.path.endsWith('/status')) {
        polls += 1;
        if (statusFails) return json(res, 500, { detail: 'Internal Server Error' });
        if (polls > finishAfter) return json(res, 200, { status: 'COMPLETED', logs: null });
        return json(res, 202, polls === 1 ? { status: 'IN_QUEUE', queue_position: 1 } : { status: 'IN_PROGRESS', logs: [] });
      }
      if (req.method === 'PUT' && req.path.endsWith('/cancel')) return json(res, 202, { status: 'CANCELLATION_REQUESTED' });
      if (req.method === 'GET' && /\/requests\/[^/]+$/.test(req.path)) {
        return json(res, 200, { images: [{ url: `${cdnBase ?? base}/cdn/out-1.png`, width: 20, height: 10, content_type: 'image/png' }], seed: 42, has_nsfw_concepts: [false] });
      }
      if (req.method === 'GET' && req.path === '/cdn/out-1.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(image);
      json(res, 404, { detail: 'Not Found' });
    });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.seen.length = 0;
    polls = 0;
    cdnBase = undefined;
    statusFails = false;
  });

  const node = () => nodeOf(mediaProviderNodes(settings({ openaiApiKey: '', falKey: FAL_KEY, falBaseUrl: fake.base })), 'fal-image');

  /** A run's artifact store whose safe fetching resolves cdn.test to the fake (a loopback address), allowed or not. */
  function storeFetchingCdn(allowPrivate: string[]): BlobArtifactStore {
    const fetchRemote = createInputFetcher({ allowPrivate, maxBytes: 1024 * 1024, timeoutMs: 5000, resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    const store = new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-media-cdn-')));
    return new BlobArtifactStore({ store, signer: new BlobUrlSigner({ publicBaseUrl: BASE, secret: 'k'.repeat(40) }), publicBaseUrl: BASE, keyPrefix: 'runs/media-test', urlTtlSeconds: 600, fetchRemote });
  }

  it('reads a result link on another host through the address rules: a private address is refused, an allowed one is read without the key', async () => {
    finishAfter = 0;
    cdnBase = fake.base.replace('127.0.0.1', 'cdn.test');
    const refused = await node().execute({ prompt: 'p' }, nodeContext(undefined, storeFetchingCdn([]))).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'unavailable', message: expect.stringMatching(/^fal returned a result URL the service does not fetch: .*cdn\.test/) });
    expect(fake.seen.map((s) => s.path)).not.toContain('/cdn/out-1.png');

    fake.seen.length = 0;
    const outputs = await node().execute({ prompt: 'p' }, nodeContext(undefined, storeFetchingCdn(['cdn.test'])));
    const download = fake.seen.find((s) => s.path === '/cdn/out-1.png');
    expect(download?.headers.authorization).toBeUndefined();
    expect(download?.headers.host).toBe(new URL(cdnBase).host);
    expect(outputs.image).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 20, height: 10 } });

    // A store that fetches nothing from other hosts refuses the link the same way.
    await expect(node().execute({ prompt: 'p' }, nodeContext(undefined, artifacts))).rejects.toMatchObject({ code: 'unavailable', message: expect.stringContaining('does not fetch files from other hosts') });
  });

  it('submits, polls the status until COMPLETED, fetches the result and re-hosts the images', async () => {
    finishAfter = 2;
    const progress: string[] = [];
    const outputs = await node().execute({ prompt: 'a red fox', image_size: 'square_hd', seed: 7 }, { ...nodeContext(undefined, artifacts), progress: (m) => progress.push(m) });
    const [submit] = fake.seen;
    expect(submit!.headers.authorization).toBe(`Key ${FAL_KEY}`);
    expect(JSON.parse(submit!.body.toString())).toEqual({ prompt: 'a red fox', num_images: 1, image_size: 'square_hd', seed: 7 });
    expect(fake.seen.map((s) => `${s.method} ${s.path.replace(/req-\d+/, 'ID')}`)).toEqual([
      'POST /fal-ai/flux/schnell',
      'GET /fal-ai/flux/requests/ID/status',
      'GET /fal-ai/flux/requests/ID/status',
      'GET /fal-ai/flux/requests/ID/status',
      'GET /fal-ai/flux/requests/ID',
      'GET /cdn/out-1.png',
    ]);
    expect(fake.seen.slice(0, 5).every((s) => s.headers.authorization === `Key ${FAL_KEY}`)).toBe(true);
    expect(fake.seen[5]!.headers.authorization).toBeUndefined();
    expect(progress).toEqual(expect.arrayContaining(['fal: queued at position 1', 'fal: in progress']));
    expect(outputs.image).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 20, height: 10 } });
    ours(outputs.image);
    expect(JSON.stringify(outputs)).not.toContain(fake.base);
  });

  it('cancels a job whose polling fails after fal accepted it, and marks the failure for a charge of its worst case', async () => {
    statusFails = true;
    const failure = await node().execute({ prompt: 'p' }, nodeContext(undefined, artifacts)).catch((e: unknown) => e);
    // Accepted, so possibly run and billed: the step executor charges an `outcomeUnknown` failure the step's estimate.
    expect(failure).toBeInstanceOf(AppError);
    expect(failure).toMatchObject({ code: 'unavailable', message: expect.stringContaining('fal failed (500)'), outcomeUnknown: true });
    expect(fake.seen.map((s) => `${s.method} ${s.path.replace(/req-\d+/, 'ID')}`)).toEqual([
      'POST /fal-ai/flux/schnell',
      'GET /fal-ai/flux/requests/ID/status',
      'GET /fal-ai/flux/requests/ID/status',
      'GET /fal-ai/flux/requests/ID/status',
      'PUT /fal-ai/flux/requests/ID/cancel',
    ]);
  });

  it('calls the cancel_url when the run aborts while the request is queued', async () => {
    finishAfter = Number.POSITIVE_INFINITY;
    const controller = new AbortController();
    const running = node().execute({ prompt: 'never finishes' }, nodeContext(controller.signal, artifacts));
    await eventually(() => polls >= 2);
    controller.abort(new Error('run cancelled'));
    await expect(running).rejects.toThrow('run cancelled');
    await eventually(() => fake.seen.some((s) => s.method === 'PUT'));
    const cancel = fake.seen.find((s) => s.method === 'PUT')!;
    expect(cancel.path).toMatch(/^\/fal-ai\/flux\/requests\/req-\d+\/cancel$/);
    expect(cancel.headers.authorization).toBe(`Key ${FAL_KEY}`);
  });
});

describe('Replicate node against a local fake', () => {
  let fake: Awaited<ReturnType<typeof fakeProvider>>;
  let image: Buffer;
  let gets = 0;
  let finishAfter = 1;

  beforeAll(async () => {
    image = await png(16, 16);
    fake = await fakeProvider((req, res, base) => {
      const prediction = (status: string, output: unknown = null) => ({
        id: 'pred-1',
        model: 'black-forest-labs/flux-schnell',
        status,
        input: {},
        output,
        error: null,
        urls: { get: `${base}/v1/predictions/pred-1`, cancel: `${base}/v1/predictions/pred-1/cancel`, stream: `${base}/stream/pred-1` },
      });
      if (req.method === 'POST' && req.path === '/v1/models/black-forest-labs/flux-schnell/predictions') return json(res, 201, prediction('starting'));
      if (req.method === 'GET' && req.path === '/v1/predictions/pred-1') {
        gets += 1;
        return json(res, 200, gets > finishAfter ? prediction('succeeded', [`${base}/delivery/out-0.webp`]) : prediction('processing'));
      }
      if (req.method === 'POST' && req.path === '/v1/predictions/pred-1/cancel') return json(res, 200, prediction('canceled'));
      if (req.method === 'GET' && req.path === '/delivery/out-0.webp') return res.writeHead(200, { 'content-type': 'image/png' }).end(image);
      json(res, 404, { title: 'Not found', detail: 'The requested resource could not be found.', status: 404 });
    });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.seen.length = 0;
    gets = 0;
  });

  const node = () => nodeOf(mediaProviderNodes(settings({ openaiApiKey: '', replicateApiToken: REPLICATE_TOKEN, replicateBaseUrl: fake.base })), 'replicate-image');

  it('creates a prediction with Prefer: wait, polls urls.get, and re-hosts the output', async () => {
    finishAfter = 1;
    const inputs = { prompt: 'a lighthouse', input: { aspect_ratio: '1:1', num_outputs: 4 } };
    const outputs = await node().execute(inputs, nodeContext(undefined, artifacts));
    const [create] = fake.seen;
    expect(create!.headers.authorization).toBe(`Bearer ${REPLICATE_TOKEN}`);
    expect(create!.headers.prefer).toBe('wait=2');
    // Our num_outputs wins over "input", so the reserve bounds the charge.
    expect(JSON.parse(create!.body.toString())).toEqual({ input: { aspect_ratio: '1:1', prompt: 'a lighthouse', num_outputs: 1 } });
    expect(fake.seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      'POST /v1/models/black-forest-labs/flux-schnell/predictions',
      'GET /v1/predictions/pred-1',
      'GET /v1/predictions/pred-1',
      'GET /delivery/out-0.webp',
    ]);
    expect(outputs.images).toHaveLength(1);
    ours(outputs.image);
    expect(JSON.stringify(outputs)).not.toContain(fake.base);
    expect(node().price(inputs, outputs)).toBe(3000);
  });

  it('posts to urls.cancel when the run aborts while the prediction runs', async () => {
    finishAfter = Number.POSITIVE_INFINITY;
    const controller = new AbortController();
    const running = node().execute({ prompt: 'slow' }, nodeContext(controller.signal, artifacts));
    await eventually(() => gets >= 1);
    controller.abort(new Error('run cancelled'));
    await expect(running).rejects.toThrow('run cancelled');
    await eventually(() => fake.seen.some((s) => s.path === '/v1/predictions/pred-1/cancel'));
    expect(fake.seen.find((s) => s.path.endsWith('/cancel'))!).toMatchObject({ method: 'POST', headers: expect.objectContaining({ authorization: `Bearer ${REPLICATE_TOKEN}` }) });
  });
});

describe('openai-image through the whole service', () => {
  it('is in the catalog when OPENAI_API_KEY is set, and a run returns an image ref to our blob URL', async () => {
    const image = await png(8, 8);
    const fake = await fakeProvider((req, res) => {
      if (req.path === '/v1/images/generations') return json(res, 200, { data: [{ b64_json: image.toString('base64') }] });
      json(res, 404, { error: { message: 'not here' } });
    });
    const service = await startTestService({ env: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: `${fake.base}/v1`, OPENAI_IMAGE_PRICES: 'gpt-image-1=40000' } });
    try {
      const spec = await fetch(`${service.url}/v1/nodes/openai-image`);
      expect(spec.status).toBe(200);
      expect(await spec.json()).toMatchObject({ id: 'openai-image', inputs: { prompt: expect.anything() } });
      const res = await fetch(`${service.url}/v1/runs/node`, {
        method: 'POST',
        headers: { ...bearer(service.account.token), 'content-type': 'application/json' },
        body: JSON.stringify({ node: 'openai-image', inputs: { prompt: 'a tiny square' } }),
      });
      const body = (await res.json()) as { outputs: Record<string, Artifact> };
      expect(res.status).toBe(200);
      expect(body.outputs.image).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 8, height: 8 } });
      expect(body.outputs.image!.ref!.startsWith(`${service.url}/blobs/`)).toBe(true);
      expect(JSON.stringify(body)).not.toContain(fake.base);
      const served = await fetch(body.outputs.image!.ref!);
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(image)).toBe(true);
      expect(fake.seen[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    } finally {
      await service.close();
      await fake.close();
    }
  });
});
