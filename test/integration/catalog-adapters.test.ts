import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { stringify } from 'yaml';
import { BlobUrlSigner, FsBlobStore } from '../../services/blobs';
import { BlobArtifactStore, catalogNode, llmProviderNodes, type CatalogEntry, type NodeDefinition, type ProviderConnections } from '../../services/nodes';
import { AppError } from '../../services/platform/app-error';
import { hostedRoutes } from '../support/hosted-fake';
import { anthropicStream, jsonReply, openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { nodeContext } from '../support/node-harness';
import { exited } from '../support/worker-process';
import { silentWav } from '../support/wav';

/**
 * The adapters catalog entries share with the nodes written in code: the chat nodes' IMAGE input
 * in each provider's wire format, Anthropic entries, a catalog answer without a mapped output (a
 * malformed answer, charged), and a bad catalog file stopping the process at start.
 */

const ROOT = path.resolve(__dirname, '../..');
const OPENAI_KEY = 'sk-test-openai-0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-test-0123456789abcdef';
const BASE = 'http://svc.test';

let fake: LlmFake;
let artifacts: BlobArtifactStore;
let png: Buffer;

beforeAll(async () => {
  fake = await startLlmFake(async () => undefined);
  const store = new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-catalog-adapters-')));
  artifacts = new BlobArtifactStore({ store, signer: new BlobUrlSigner({ publicBaseUrl: BASE, secret: 'k'.repeat(40) }), publicBaseUrl: BASE, keyPrefix: 'runs/catalog-test', urlTtlSeconds: 600 });
  png = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#0a0' } }).png().toBuffer();
});
afterAll(() => fake.close());

const connections = (): ProviderConnections => ({
  falKey: 'fal-key-0123456789', falBaseUrl: `${fake.url}/fal`, replicateApiToken: '', replicateBaseUrl: `${fake.url}/replicate`,
  openaiApiKey: OPENAI_KEY, openaiBaseUrl: `${fake.url}/v1`, anthropicApiKey: ANTHROPIC_KEY, anthropicBaseUrl: fake.url,
  providerTimeoutMs: 5000, providerPollMs: 10,
});

function codeNode(id: string): NodeDefinition {
  const nodes = llmProviderNodes({
    openaiApiKey: OPENAI_KEY, openaiBaseUrl: `${fake.url}/v1`, openaiModels: ['fake-mini'], openaiPrices: { 'fake-mini': { input: '0.15', output: '0.60' } },
    anthropicApiKey: ANTHROPIC_KEY, anthropicBaseUrl: fake.url, anthropicModels: ['claude-fake'], anthropicPrices: { 'claude-fake': { input: '3.00', output: '15.00' } },
    providerTimeoutMs: 5000,
  });
  return nodes.find((n) => n.spec.id === id)!;
}

describe('vision: the chat nodes send an IMAGE input in each provider\'s format', () => {
  it('openai-chat: a user message of a text part and an image_url part with a data: URL', async () => {
    fake.script(openAiStream(['a green square'], { prompt: 900, completion: 4 }));
    const image = await artifacts.put(png, { mimeType: 'image/png' });
    const node = codeNode('openai-chat');
    const without = node.estimate({ prompt: 'What is this?' });
    expect(node.estimate({ prompt: 'What is this?', image })).toBeGreaterThan(without);
    const outputs = await node.execute({ prompt: 'What is this?', image }, nodeContext(undefined, artifacts));
    expect(outputs.text).toBe('a green square');
    expect(fake.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }] },
    ]);
  });

  it('anthropic-messages: a user message of a base64 image block and a text block', async () => {
    fake.script(anthropicStream(['green'], { input: 900, output: 2 }));
    const image = await artifacts.put(png, { mimeType: 'image/png' });
    await codeNode('anthropic-messages').execute({ prompt: 'Colour?', system: 'Be brief.', image }, nodeContext(undefined, artifacts));
    const body = fake.requests.at(-1)!.body;
    expect(body.system).toBe('Be brief.');
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') } }, { type: 'text', text: 'Colour?' }] },
    ]);
  });

  it('refuses an image format neither provider reads, before calling', async () => {
    const before = fake.requests.length;
    const tiff = await artifacts.put(await sharp(png).tiff().toBuffer(), { mimeType: 'image/tiff' });
    await expect(codeNode('openai-chat').execute({ prompt: 'x', image: tiff }, nodeContext(undefined, artifacts))).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringContaining('image/tiff') });
    expect(fake.requests.length).toBe(before);
  });

  it('a catalog chat entry without vision has no image input; an Anthropic entry streams from the Messages API priced by its formula', async () => {
    const entry = {
      id: 'claude-entry', provider: 'anthropic', model: 'claude-fake-2', title: 'Claude', category: 'llm', description: 'Chat.',
      price: { estimate: 'input_tokens * 3 + output_tokens * 15', actual: 'input_tokens * 3 + output_tokens * 15' },
    } as CatalogEntry;
    const node = catalogNode(entry, connections()) as NodeDefinition;
    expect(node.spec.inputs.image).toBeUndefined();
    fake.script(anthropicStream(['Hi'], { input: 10, output: 2 }));
    const outputs = await node.execute({ prompt: 'Hello' }, nodeContext(undefined, artifacts));
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(sent.body).toMatchObject({ model: 'claude-fake-2', messages: [{ role: 'user', content: 'Hello' }], stream: true });
    expect(node.price({ prompt: 'Hello' }, outputs)).toBe(10 * 3 + 2 * 15);
  });
});

const openAiEntry = (provider: string, fields: Record<string, unknown>) =>
  ({ id: `${provider}-entry`, provider, title: 'T', category: 'c', description: 'd', ...fields }) as unknown as CatalogEntry;


describe('OpenAI-compatible media entries against the fake', () => {
  const ours = (artifact: unknown) => expect((artifact as { ref: string }).ref).toMatch(/^http:\/\/svc\.test\/blobs\/runs\/catalog-test\//);

  it('openai-images: POST /images/generations with the model, b64_json re-hosted, priced per image', async () => {
    fake.script(jsonReply(200, { created: 1, data: [{ b64_json: png.toString('base64') }], usage: { input_tokens: 12, output_tokens: 4160 } }));
    const node = catalogNode(openAiEntry('openai-images', {
      model: 'gpt-image-1', inputs: { prompt: { type: 'TEXT', maxLength: 32000 }, size: { type: 'TEXT', default: '1024x1024', options: ['1024x1024'] } },
      request: { fixed: { n: 1, quality: 'low' } }, outputs: { image: { type: 'IMAGE', from: 'data[0]' } },
      price: { estimate: '20000', actual: 'input_tokens * 5 + output_tokens * 40 / 10' },
    }), connections()) as NodeDefinition;
    const outputs = await node.execute({ prompt: 'a cat' }, nodeContext(undefined, artifacts));
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/images/generations');
    expect(sent.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(sent.body).toEqual({ model: 'gpt-image-1', prompt: 'a cat', size: '1024x1024', n: 1, quality: 'low' });
    expect(outputs.image).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 8, height: 6 } });
    ours(outputs.image);
    expect(outputs.usage).toMatchObject({ input_tokens: 12, output_tokens: 4160 });
    expect(node.price({ prompt: 'a cat' }, outputs)).toBe(12 * 5 + 4160 * 4);
  });

  it('openai-embeddings: POST /embeddings, the vector as an EMBEDDING, priced by the reported tokens', async () => {
    fake.script(jsonReply(200, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2, 0.3] }], model: 'text-embedding-3-small', usage: { prompt_tokens: 7, total_tokens: 7 } }));
    const node = catalogNode(openAiEntry('openai-embeddings', {
      model: 'text-embedding-3-small', inputs: { text: { type: 'TEXT', maxLength: 30000 } }, request: { fields: { input: 'text' } },
      outputs: { embedding: { type: 'EMBEDDING', from: 'data[0].embedding' } }, price: { estimate: 'len(text) * 0.02', actual: 'input_tokens * 0.02' },
    }), connections()) as NodeDefinition;
    const outputs = await node.execute({ text: 'hello world' }, nodeContext(undefined, artifacts));
    expect(fake.requests.at(-1)!).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small', encoding_format: 'float', input: 'hello world' } });
    expect(outputs.embedding).toEqual([0.1, -0.2, 0.3]);
    expect(node.price({ text: 'hello world' }, outputs)).toBe(1);
  });

  it('openai-speech: POST /audio/speech, the audio bytes re-hosted', async () => {
    const audio = silentWav(400);
    fake.script(async (res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(audio);
    });
    const node = catalogNode(openAiEntry('openai-speech', {
      model: 'tts-1', inputs: { text: { type: 'TEXT', maxLength: 4096 }, voice: { type: 'TEXT', default: 'alloy' } }, request: { fields: { input: 'text' }, fixed: { response_format: 'wav' } },
      outputs: { audio: { type: 'AUDIO', from: 'audio' } }, price: { estimate: 'len(text) * 15', actual: 'len(text) * 15' },
    }), connections()) as NodeDefinition;
    const outputs = await node.execute({ text: 'Hello.' }, nodeContext(undefined, artifacts));
    expect(fake.requests.at(-1)!).toMatchObject({ path: '/v1/audio/speech', body: { model: 'tts-1', input: 'Hello.', voice: 'alloy', response_format: 'wav' } });
    expect(outputs.audio).toMatchObject({ kind: 'audio', mimeType: 'audio/wav' });
    ours(outputs.audio);
    expect((await artifacts.read(outputs.audio as never)).bytes.equals(audio)).toBe(true);
    expect(node.price({ text: 'Hello.' }, outputs)).toBe(90);
  });

  it('openai-transcribe: a multipart upload of the audio and fields, priced by the reported duration', async () => {
    fake.script(jsonReply(200, { text: 'hello there', duration: 12.5, language: 'english' }));
    const node = catalogNode(openAiEntry('openai-transcribe', {
      model: 'whisper-1', inputs: { audio: { type: 'AUDIO' }, language: { type: 'TEXT', optional: true } }, request: { fields: { file: 'audio' }, fixed: { response_format: 'verbose_json' } },
      outputs: { text: { type: 'TEXT', from: 'text' } }, price: { estimate: '60000', actual: 'ceil(seconds) * 100' },
    }), connections()) as NodeDefinition;
    const audio = await artifacts.put(silentWav(800), { mimeType: 'audio/wav' });
    const outputs = await node.execute({ audio, language: 'en' }, nodeContext(undefined, artifacts));
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/audio/transcriptions');
    expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const parts = sent.raw.toString('latin1');
    expect(parts).toMatch(/name="model"\r\n\r\nwhisper-1\r\n/);
    expect(parts).toMatch(/name="language"\r\n\r\nen\r\n/);
    expect(parts).toMatch(/name="response_format"\r\n\r\nverbose_json\r\n/);
    expect(parts).toMatch(/name="file"; filename="file\.wav"\r\nContent-Type: audio\/wav\r\n\r\nRIFF/);
    expect(outputs).toMatchObject({ text: 'hello there', usage: { seconds: 12.5 } });
    expect(node.price({ audio, language: 'en' }, outputs)).toBe(1300);
  });
});

describe('a catalog entry whose answer lacks a mapped output', () => {
  it('fails as a malformed provider answer, marked to be charged', async () => {
    fake.fallback = hostedRoutes(() => fake.url, { files: {}, fal: () => ({ images: [] , detail: 'nothing' }), replicate: () => ({ output: null }) });
    const entry = {
      id: 'fal-entry', provider: 'fal', model: 'fal-ai/some-app', title: 'Some app', category: 'image', description: 'An app.',
      inputs: { prompt: { type: 'TEXT' } },
      outputs: { image: { type: 'IMAGE', from: 'image.url' } },
      price: { estimate: '1000', actual: '1000' },
    } as CatalogEntry;
    const node = catalogNode(entry, connections()) as NodeDefinition;
    const err = await node.execute({ prompt: 'p' }, nodeContext(undefined, artifacts)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'malformed_provider_response', message: 'fal sent a malformed answer: an answer without "image.url" (output "image" of fal-entry)', outcomeUnknown: true });
    expect(fake.requests.find((r) => r.path === '/fal/fal-ai/some-app')?.body).toEqual({ prompt: 'p' });
  });
});

describe('a bad catalog file', () => {
  it('stops the service process at start with one line naming the file, the entry and the field', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bad-catalog-')), 'models.yaml');
    fs.writeFileSync(file, stringify({
      nodes: [{
        id: 'fal-flux-schnell', provider: 'fal', model: 'fal-ai/flux/schnell', title: 'FLUX', category: 'image', description: 'd',
        inputs: { prompt: { type: 'TEXT' }, num_images: { type: 'INT', default: 1 } },
        outputs: { images: { type: 'IMAGE', array: true, from: 'images', item: 'url' } },
        price: { estimate: '3000 * num_imgs', actual: '3000 * images' },
      }],
    }));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'BLOB_SIGNING_SECRET', 'BLOB_DRIVER', 'BLOB_DIR']) delete env[name];
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'workers/serve.ts')], {
      cwd: ROOT,
      // Nothing listens at these: the refusal comes before any connection is tried.
      env: { ...env, DATABASE_URL: 'postgresql://svc@127.0.0.1:9/svc', REDIS_URL: 'redis://127.0.0.1:9', BLOB_SIGNING_SECRET: 'test-signing-secret-0123456789abcdef', PORT: '0', LOG_LEVEL: 'silent', NODE_CATALOG_FILES: file },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await exited(child);
    expect(child.exitCode).toBe(2);
    expect(stderr).toBe(`error: ${file}: entry 1 ("fal-flux-schnell"): price.estimate: unknown variable "num_imgs"; it may use "prompt", "num_images"\n`);
  }, 60_000);
});
