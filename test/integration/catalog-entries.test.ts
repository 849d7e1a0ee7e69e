import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { Artifact, RunEvent } from '../../services/contract';
import { readCatalogFile, type CatalogEntry } from '../../services/nodes';
import { hostedRoutes, type HostedAnswers } from '../support/hosted-fake';
import { startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';
import { silentWav } from '../support/wav';

/**
 * Every entry of the curated catalog (catalog/hosted-models.yaml) through the whole service,
 * against local fakes of fal's queue API, Replicate's predictions and an OpenAI-compatible chat
 * API: the request its provider gets (path and body), its outputs re-hosted in our blob store
 * (never the provider's URL), and the price charged to the run.
 */

const FAL_KEY = 'fal-test-key-0123456789abcdef';
const REPLICATE_TOKEN = 'r8_test_token_0123456789abcdef';
const OPENROUTER_KEY = 'sk-or-test-0123456789abcdef';
const CURATED = path.join(__dirname, '../../catalog/hosted-models.yaml');

/** A 4-byte-size MP4 header (`ftyp` box, brand isom): sniffed as video/mp4. */
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12)]);


let png: Buffer;
const answers: HostedAnswers = {
  files: {},
  fal(app, _input, files) {
    switch (app) {
      case 'fal-ai/flux/schnell':
        return { images: [{ url: `${files}/out.png`, width: 48, height: 32, content_type: 'image/png' }], seed: 7, has_nsfw_concepts: [false] };
      case 'fal-ai/flux/dev/image-to-image':
        return { images: [{ url: `${files}/out.png`, width: 48, height: 32, content_type: 'image/png' }], seed: 7 };
      case 'fal-ai/clarity-upscaler':
        return { image: { url: `${files}/out.png`, width: 48, height: 32 }, seed: 7 };
      case 'fal-ai/birefnet/v2':
        return { image: { url: `${files}/out.png` }, mask_image: { url: `${files}/out.png` } };
      case 'fal-ai/kling-video/v2.1/standard/image-to-video':
        return { video: { url: `${files}/out.mp4`, content_type: 'video/mp4' } };
      case 'fal-ai/whisper':
        return { text: 'hello world', chunks: [{ timestamp: [0, 1.2], text: 'hello world' }], inferred_languages: ['en'] };
      case 'fal-ai/kokoro/american-english':
        return { audio: { url: `${files}/out.wav`, content_type: 'audio/wav' } };
      default:
        return {};
    }
  },
  replicate(model, input, files): { output: unknown; metrics?: Record<string, number> } {
    if (model === 'black-forest-labs/flux-schnell') return { output: Array.from({ length: Number(input.num_outputs) }, () => `${files}/out.png`), metrics: { predict_time: 0.8 } };
    if (model.startsWith('version:')) return { output: `${files}/out.png`, metrics: { predict_time: 2.5 } };
    if (model === 'meta/meta-llama-3-8b-instruct') return { output: ['Hel', 'lo', '!'], metrics: { input_token_count: 40, output_token_count: 10, predict_time: 0.4 } };
    return { output: null };
  },
};

interface Case {
  /** Inputs of the node; `$image` and `$audio` become uploaded artifacts. */
  inputs: Record<string, unknown>;
  /** The provider request: path at the fake and the JSON body (media inputs as data: URIs). */
  path: string;
  body: Record<string, unknown>;
  /** Output port → the kind of artifact it holds (an array: each item's). */
  outputs: Record<string, 'image' | 'video' | 'audio' | 'text' | 'json'>;
  costMicros: number;
}

const imageUri = expect.stringMatching(/^data:image\/png;base64,[A-Za-z0-9+/=]+$/);
const CASES: Record<string, Case> = {
  'fal-flux-schnell': {
    inputs: { prompt: 'a red fox', num_images: 2 },
    path: '/fal/fal-ai/flux/schnell',
    body: { prompt: 'a red fox', image_size: 'landscape_4_3', num_images: 2, num_inference_steps: 4, enable_safety_checker: true },
    outputs: { image: 'image', images: 'image' },
    // One image answered: 3000 × 1, under the reserve of 3000 × 2.
    costMicros: 3000,
  },
  'fal-flux-dev-img2img': {
    inputs: { image: '$image', prompt: 'as a watercolour' },
    path: '/fal/fal-ai/flux/dev/image-to-image',
    body: { image_url: imageUri, prompt: 'as a watercolour', strength: 0.95, num_inference_steps: 40, num_images: 1, enable_safety_checker: true },
    outputs: { image: 'image' },
    costMicros: 25000,
  },
  'fal-clarity-upscale': {
    inputs: { image: '$image', upscale_factor: 2 },
    path: '/fal/fal-ai/clarity-upscaler',
    body: { image_url: imageUri, prompt: 'masterpiece, best quality, highres', upscale_factor: 2, creativity: 0.35 },
    outputs: { image: 'image' },
    costMicros: 30000,
  },
  'fal-birefnet-remove-bg': {
    inputs: { image: '$image' },
    path: '/fal/fal-ai/birefnet/v2',
    body: { image_url: imageUri, model: 'General Use (Light)', output_format: 'png' },
    outputs: { image: 'image', mask: 'image' },
    costMicros: 2000,
  },
  'fal-kling-image-to-video': {
    inputs: { image: '$image', prompt: 'snow starts to fall', duration: '10' },
    path: '/fal/fal-ai/kling-video/v2.1/standard/image-to-video',
    body: { image_url: imageUri, prompt: 'snow starts to fall', duration: '10' },
    outputs: { video: 'video' },
    costMicros: 500000,
  },
  'fal-whisper': {
    inputs: { audio: '$audio', language: 'en' },
    path: '/fal/fal-ai/whisper',
    body: { audio_url: expect.stringMatching(/^data:audio\/wav;base64,/), task: 'transcribe', language: 'en' },
    outputs: { text: 'text', chunks: 'json' },
    costMicros: 30000,
  },
  'fal-kokoro-tts': {
    inputs: { prompt: 'Hello from the catalog.' },
    path: '/fal/fal-ai/kokoro/american-english',
    body: { prompt: 'Hello from the catalog.', voice: 'af_heart', speed: 1 },
    outputs: { audio: 'audio' },
    // 23 characters × 20 micro-USD.
    costMicros: 460,
  },
  'replicate-flux-schnell': {
    inputs: { prompt: 'a lighthouse', num_outputs: 2, aspect_ratio: '16:9' },
    path: '/replicate/v1/models/black-forest-labs/flux-schnell/predictions',
    body: { input: { prompt: 'a lighthouse', aspect_ratio: '16:9', num_outputs: 2, output_format: 'webp' } },
    outputs: { image: 'image', images: 'image' },
    costMicros: 6000,
  },
  'replicate-real-esrgan': {
    inputs: { image: '$image', scale: 2 },
    path: '/replicate/v1/predictions',
    body: { version: 'f121d640bd286e1fdc67f9799164c1d5be36ff74576ee11c803ae5b665dd46aa', input: { image: imageUri, scale: 2, face_enhance: false } },
    outputs: { image: 'image' },
    // 2.5 s of T4 at 225 micro-USD a second, rounded up.
    costMicros: 563,
  },
  'replicate-llama-3-8b': {
    inputs: { prompt: 'Say hello', max_tokens: 64 },
    path: '/replicate/v1/models/meta/meta-llama-3-8b-instruct/predictions',
    body: { input: { prompt: 'Say hello', system_prompt: 'You are a helpful assistant', max_tokens: 64, temperature: 0.6 } },
    outputs: { text: 'text' },
    // 40 × 0.05 + 10 × 0.25 = 4.5, rounded up.
    costMicros: 5,
  },
  'openrouter-llama-3-3-70b': {
    inputs: { prompt: 'Say hello', maxTokens: 100 },
    path: '/openai/v1/chat/completions',
    body: { model: 'meta-llama/llama-3.3-70b-instruct', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 100, stream: true },
    outputs: { text: 'text', usage: 'json' },
    // 120 × 0.13 + 30 × 0.40 = 27.6, rounded up.
    costMicros: 28,
  },
};

let fake: LlmFake;
let service: TestService;
let curated: CatalogEntry[];

beforeAll(async () => {
  png = await sharp({ create: { width: 48, height: 32, channels: 3, background: '#08f' } }).png().toBuffer();
  answers.files['out.png'] = { type: 'image/png', bytes: png };
  answers.files['out.mp4'] = { type: 'video/mp4', bytes: MP4 };
  answers.files['out.wav'] = { type: 'audio/wav', bytes: silentWav(800) };
  fake = await startLlmFake(async () => undefined);
  fake.fallback = hostedRoutes(() => fake.url, answers);
  curated = readCatalogFile(CURATED);
  // The curated file as shipped, but for the OpenRouter entry's fixed base URL, pointed at the fake.
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-catalog-')), 'hosted-models.yaml');
  fs.writeFileSync(file, fs.readFileSync(CURATED, 'utf8').replace('https://openrouter.ai/api/v1', `${fake.url}/openai/v1`));
  process.env.OPENROUTER_API_KEY = OPENROUTER_KEY;
  service = await startTestService({
    env: { FAL_KEY, FAL_BASE_URL: `${fake.url}/fal`, REPLICATE_API_TOKEN: REPLICATE_TOKEN, REPLICATE_BASE_URL: `${fake.url}/replicate`, PROVIDER_POLL_MS: '10', NODE_CATALOG_FILES: file },
  });
}, 60_000);
afterAll(async () => {
  delete process.env.OPENROUTER_API_KEY;
  await service?.close();
  await fake?.close();
});

async function upload(bytes: Buffer, type: string): Promise<Artifact> {
  const res = await fetch(`${service.url}/v1/uploads`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': type }, body: bytes });
  expect(res.status).toBe(201);
  return (await res.json()) as Artifact;
}

/** Runs one node with an output node per port; answers its step's cost, the run's outputs and the run's id. */
async function runNode(id: string, inputs: Record<string, unknown>, outputs: readonly string[]) {
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({
      workflow: { version: 2, nodes: [{ id: 'model', uses: id, inputs }, ...outputs.map((port) => ({ id: `out-${port}`, uses: 'output', inputs: { value: `\${model.${port}}` } }))] },
    }),
  });
  expect(res.status).toBe(200);
  const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
  const last = events.at(-1)!;
  if (last.type !== 'run.completed') throw new Error(`run of ${id} ended with ${JSON.stringify(last)}`);
  const completed = events.find((e): e is Extract<RunEvent, { type: 'step.completed' }> => e.type === 'step.completed' && e.nodeId === 'model')!;
  return { costUsd: completed.usage.costUsd, outputs: last.outputs as Record<string, unknown> };
}

describe('the curated catalog', () => {
  it('has a case here for every entry, and every entry is in the palette with its example', async () => {
    expect(curated.map((e) => e.id).sort()).toEqual(Object.keys(CASES).sort());
    const listed = (await (await fetch(`${service.url}/v1/nodes?limit=500`)).json()) as { id: string }[];
    expect(listed.map((n) => n.id)).toEqual(expect.arrayContaining(Object.keys(CASES)));
    const spec = (await (await fetch(`${service.url}/v1/nodes/fal-flux-schnell`)).json()) as Record<string, unknown>;
    expect(spec).toMatchObject({ id: 'fal-flux-schnell', kind: 'model', category: 'image', example: { prompt: expect.any(String) }, inputs: { prompt: { connector: { id: 'TEXT', maxLength: 2000 } } } });
  });

  it.each(Object.keys(CASES))('%s: sends the provider request, re-hosts its outputs and charges its price', async (id) => {
    const c = CASES[id]!;
    const inputs: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(c.inputs)) {
      inputs[name] = value === '$image' ? await upload(png, 'image/png') : value === '$audio' ? await upload(silentWav(8000), 'audio/wav') : value;
    }
    const before = fake.requests.length;
    const { costUsd, outputs } = await runNode(id, inputs, Object.keys(c.outputs));

    const sent = fake.requests.slice(before).find((r) => r.method === 'POST');
    expect(sent?.path).toBe(c.path);
    expect(sent!.body).toEqual(expect.objectContaining(c.body));
    const auth = id.startsWith('fal-') ? `Key ${FAL_KEY}` : id.startsWith('replicate-') ? `Bearer ${REPLICATE_TOKEN}` : `Bearer ${OPENROUTER_KEY}`;
    expect(sent!.headers.authorization).toBe(auth);

    for (const [port, kind] of Object.entries(c.outputs)) {
      const value = outputs[`out-${port}`] as { kind: string; value?: unknown };
      // A list output reaches the run's outputs as a structured list of its artifacts.
      const items = (kind !== 'json' && value.kind === 'structured' && Array.isArray(value.value) ? value.value : [value]) as Artifact[];
      expect(items.length).toBeGreaterThan(0);
      for (const item of items) {
        if (kind === 'text' || kind === 'json') {
          expect(item).toMatchObject(kind === 'text' ? { kind: 'text', value: expect.any(String) } : { value: expect.anything() });
          continue;
        }
        // Re-hosted: a ref into our blob store, with the bytes the provider gave.
        expect(item).toMatchObject({ kind, ref: expect.stringMatching(new RegExp(`^${service.url}/blobs/`)) });
        const served = await fetch(item.ref!);
        expect(served.status).toBe(200);
        expect((await served.arrayBuffer()).byteLength).toBeGreaterThan(0);
      }
    }
    expect(JSON.stringify(outputs)).not.toContain(`${fake.url}/files`);
    expect(Math.round(costUsd * 1_000_000)).toBe(c.costMicros);
  });
});
