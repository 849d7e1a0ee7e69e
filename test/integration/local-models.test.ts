import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { BlobUrlSigner, FsBlobStore } from '../../services/blobs';
import type { Artifact, RunEvent } from '../../services/contract';
import { BlobArtifactStore, LOCAL_MODEL_NODE_IDS, localModelNodes, ModelPool, systemLocalTools, type NodeDefinition } from '../../services/nodes';
import { MODEL_TIME_BOUNDS_MS } from '../../services/nodes/local-models';
import { nodeContext } from '../support/node-harness';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

const BASE = 'http://svc.test';
const FIXTURES = path.join(__dirname, '../fixtures/local-models');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-local-models-'));
const artifacts = new BlobArtifactStore({
  store: new FsBlobStore(path.join(tmp, 'blobs')),
  signer: new BlobUrlSigner({ publicBaseUrl: BASE, secret: 'k'.repeat(40) }),
  publicBaseUrl: BASE,
  keyPrefix: 'runs/local-models',
  urlTtlSeconds: 600,
});
const ctx = (signal?: AbortSignal) => nodeContext(signal, artifacts);
const CPU_SECOND_MICROS = 20;

const pool = new ModelPool(1);
let nodes: Map<string, NodeDefinition>;
const node = (id: string): NodeDefinition => {
  const found = nodes.get(id);
  if (!found) throw new Error(`local model node ${id} is not available; run npm install (and apt-get install ffmpeg)`);
  return found;
};

/** A white PNG with black text, rendered by sharp from SVG. */
async function textImage(text: string, width: number, height: number, fontSize: number): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="white"/>
    <text x="10" y="${Math.round(height * 0.7)}" font-family="DejaVu Sans, sans-serif" font-size="${fontSize}" fill="black">${text}</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

async function put(bytes: Buffer, mimeType: string): Promise<Artifact> {
  return artifacts.put(bytes, { mimeType });
}

beforeAll(async () => {
  nodes = new Map(localModelNodes({ cpuSecondMicros: CPU_SECOND_MICROS, pool }, await systemLocalTools()).map((n) => [n.spec.id, n]));
});

afterAll(async () => {
  await pool.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('local model nodes with their real models', () => {
  it('lists every local model node when its packages are installed', () => {
    expect([...nodes.keys()].sort()).toEqual([...LOCAL_MODEL_NODE_IDS].sort());
    expect(node('image-upscale').spec.inputs.scale!.connector.optionValues).toEqual([2, 3, 4]);
  });

  it('finds the spoken part of a clip between two seconds of silence', async () => {
    const audio = await put(fs.readFileSync(path.join(FIXTURES, 'speech-between-silence.ogg')), 'audio/ogg');
    const inputs = { audio };
    const out = await node('audio-detect-speech').execute(inputs, ctx());
    const segments = out.segments as Array<{ start: number; end: number }>;
    expect(segments.length).toBeGreaterThan(0);
    // espeak's sentence lies between 1.0 s and about 3.9 s of the 4.9 s clip.
    expect(segments[0]!.start).toBeGreaterThan(0.8);
    expect(segments[0]!.start).toBeLessThan(1.3);
    expect(segments.at(-1)!.end).toBeGreaterThan(3.3);
    expect(segments.at(-1)!.end).toBeLessThan(4.2);
    expect(out.speechSeconds).toBeGreaterThan(1.5);
    const price = node('audio-detect-speech').price(inputs, out);
    expect(price).toBeGreaterThan(0);
    expect(price).toBeLessThanOrEqual(node('audio-detect-speech').estimate(inputs));
  });

  it('finds no speech in a tone', async () => {
    const tone = await sharpFreeTone();
    const out = await node('audio-detect-speech').execute({ audio: tone }, ctx());
    expect(out.segments).toEqual([]);
    expect(out.speechSeconds).toBe(0);
  });

  it('reads the text of an image rendered by sharp', async () => {
    const image = await put(await textImage('Hello world 4815', 640, 100, 44), 'image/png');
    const inputs = { image };
    const out = await node('ocr-paddle').execute(inputs, ctx());
    // PP-OCRv4 (a Chinese and English model) drops spaces between English words.
    expect(String(out.text).replace(/\s/g, '')).toBe('Helloworld4815');
    expect((out.lines as Array<{ confidence: number }>)[0]!.confidence).toBeGreaterThan(0.8);
    const price = node('ocr-paddle').price(inputs, out);
    expect(price).toBeGreaterThan(0);
    expect(price).toBeLessThanOrEqual(node('ocr-paddle').estimate(inputs));
  });

  it('upscales an image 2× and 3× into a sharper picture of the same content', async () => {
    const small = await textImage('Ab', 48, 32, 24);
    const image = await put(small, 'image/png');
    const out = await node('image-upscale').execute({ image }, ctx());
    const upscaled = out.image as Artifact & { metadata: { width: number; height: number } };
    expect(upscaled).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 96, height: 64 } });
    const big = (await artifacts.read(upscaled)).bytes;
    // Same picture: close to a plain bicubic enlargement on average, per channel.
    const model = await sharp(big).removeAlpha().raw().toBuffer();
    const bicubic = await sharp(small).resize(96, 64, { kernel: 'cubic' }).removeAlpha().raw().toBuffer();
    let diff = 0;
    let blankDiff = 0;
    for (let i = 0; i < model.length; i++) {
      diff += Math.abs(model[i]! - bicubic[i]!);
      blankDiff += Math.abs(255 - bicubic[i]!);
    }
    // The text is there: far closer to the enlargement than a blank page is.
    expect(diff).toBeLessThan(blankDiff / 3);
    expect(node('image-upscale').price({ image }, out)).toBeLessThanOrEqual(node('image-upscale').estimate({ image }));

    const x3 = (await node('image-upscale').execute({ image, scale: 3 }, ctx())).image as Artifact;
    expect(x3).toMatchObject({ metadata: { width: 144, height: 96 } });
  });

  it('classifies a page of text as safe, with the five classes\' probabilities', async () => {
    const image = await put(await textImage('Quarterly report', 400, 300, 36), 'image/png');
    const inputs = { image };
    const out = await node('image-classify-nsfw').execute(inputs, ctx());
    const scores = out.scores as Record<string, number>;
    expect(Object.keys(scores).sort()).toEqual(['Drawing', 'Hentai', 'Neutral', 'Porn', 'Sexy']);
    expect(Object.values(scores).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 2);
    expect(out.label).toBe('Neutral');
    expect(scores.Neutral).toBeGreaterThan(0.5);
    expect(out.unsafe).toBe(false);
    // A threshold of 0.05 still finds it safe; the unsafe classes are near zero.
    expect((await node('image-classify-nsfw').execute({ image, threshold: 0.05 }, ctx())).unsafe).toBe(false);
    const price = node('image-classify-nsfw').price(inputs, out);
    expect(price).toBeGreaterThan(0);
    expect(price).toBeLessThanOrEqual(node('image-classify-nsfw').estimate(inputs));
    // The first job on a thread loads the model (about 10 s on the 2-core VM).
  }, 90_000);

  it('refuses inputs over the bounds with a message naming the limit', async () => {
    const big = await put(await sharp({ create: { width: 300, height: 300, channels: 3, background: '#808080' } }).png().toBuffer(), 'image/png');
    await expect(node('image-upscale').execute({ image: big }, ctx())).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('the limit is 65536 pixels (256×256)'),
    });
    const huge = await put(await sharp({ create: { width: 2100, height: 2000, channels: 3, background: '#ffffff' } }).png().toBuffer(), 'image/png');
    await expect(node('ocr-paddle').execute({ image: huge }, ctx())).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('the limit is 4000000 pixels'),
    });
    const notAudio = await put(await textImage('x', 20, 20, 10), 'image/png');
    await expect(node('audio-detect-speech').execute({ audio: notAudio }, ctx())).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(node('image-upscale').execute({ image: big, scale: 5 }, ctx())).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('ends an aborted upscale at once, and the next job runs on a fresh thread', async () => {
    const image = await put(await sharp({ create: { width: 256, height: 256, channels: 3, background: '#3060a0' } }).png().toBuffer(), 'image/png');
    const controller = new AbortController();
    const running = node('image-upscale').execute({ image, scale: 4 }, ctx(controller.signal));
    await waitFor(() => pool.busy === 1);
    controller.abort(new Error('run cancelled'));
    // A 256×256 ×4 upscale takes minutes on one core: the rejection within the test's time is the proof.
    await expect(running).rejects.toThrow('run cancelled');
    expect(pool.busy).toBe(0);
    const text = await put(await textImage('Next 7', 200, 60, 30), 'image/png');
    expect(String((await node('ocr-paddle').execute({ image: text }, ctx())).text).replace(/\s/g, '')).toBe('Next7');
  });

  it('queues jobs beyond its threads, and an aborted queued job leaves the queue without running', async () => {
    const rgb = new Uint8Array(256 * 256 * 3).fill(90);
    const first = new AbortController();
    const queued = new AbortController();
    const long = pool.run('upscale', { rgb, width: 256, height: 256, scale: 4 }, { signal: first.signal, timeoutMs: 600_000 });
    const waiting = pool.run('upscale', { rgb, width: 256, height: 256, scale: 4 }, { signal: queued.signal, timeoutMs: 600_000 });
    await waitFor(() => pool.busy === 1);
    queued.abort(new Error('queued job cancelled'));
    await expect(waiting).rejects.toThrow('queued job cancelled');
    // The running job was not the one aborted: it still holds the thread.
    expect(pool.busy).toBe(1);
    first.abort(new Error('running job cancelled'));
    await expect(long).rejects.toThrow('running job cancelled');
    expect(pool.busy).toBe(0);
  });

  it('stops a job at its time bound', async () => {
    const rgb = new Uint8Array(256 * 256 * 3).fill(128);
    await expect(pool.run('upscale', { rgb, width: 256, height: 256, scale: 4 }, { signal: new AbortController().signal, timeoutMs: 300 })).rejects.toMatchObject({
      reason: 'timeout',
      message: 'took longer than 300 ms and was stopped',
    });
    expect(pool.busy).toBe(0);
  });

  it('leaves out the speech node when ffmpeg is missing', () => {
    const ids = localModelNodes({ cpuSecondMicros: CPU_SECOND_MICROS, pool }, { ffmpeg: undefined, ffprobe: undefined }).map((n) => n.spec.id);
    expect(ids).toEqual(['ocr-paddle', 'image-upscale', 'image-classify-nsfw']);
  });

  it('prices by CPU time at the configured price, never above the time bound at that price', () => {
    const upscale = node('image-upscale');
    const estimate = upscale.estimate({});
    expect(estimate).toBe((MODEL_TIME_BOUNDS_MS['image-upscale'] / 1000) * CPU_SECOND_MICROS);
    expect(upscale.price({}, { usage: { cpuMs: 1500 } })).toBe(30);
    expect(upscale.price({}, { usage: { cpuMs: 1 } })).toBe(1);
    expect(upscale.price({}, { usage: { cpuMs: 10_000_000 } })).toBe(estimate);
  });
});

describe('a local model node through the service', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  it('runs a workflow that speaks a sentence and finds the speech in it', async () => {
    const catalog = (await (await fetch(`${service.url}/v1/nodes`)).json()) as { id: string }[];
    expect(catalog.map((n) => n.id)).toEqual(expect.arrayContaining([...LOCAL_MODEL_NODE_IDS]));
    // Kept in step with README.md, "Local model nodes".
    const workflow = JSON.parse(fs.readFileSync(path.join(__dirname, '../../docs/examples/local-models.json'), 'utf8')) as unknown;
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify(workflow),
    });
    expect(res.status).toBe(200);
    const messages = await readSse(res);
    expect(messages.at(-1)?.data).toBe('[DONE]');
    const events = messages.slice(0, -1).map((m) => JSON.parse(m.data) as RunEvent);
    const terminal = events.at(-1) as { type: string; outputs: Record<string, { value?: unknown }> };
    expect(terminal.type).toBe('run.completed');
    const segments = terminal.outputs.segments!.value as Array<{ start: number; end: number }>;
    expect(segments.length).toBeGreaterThan(0);
    expect(terminal.outputs.speechSeconds!.value).toBeGreaterThan(1);
    const detect = events.find((e) => e.type === 'step.completed' && JSON.stringify(e).includes('"detect"')) as { usage: { costUsd: number } } | undefined;
    expect(detect?.usage.costUsd).toBeGreaterThan(0);
  });
});

/** Three seconds of a 440 Hz tone as wav, made without ffmpeg. */
async function sharpFreeTone(): Promise<Artifact> {
  const rate = 16000;
  const samples = rate * 3;
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write('RIFF', 0, 'latin1');
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write('WAVEfmt ', 8, 'latin1');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(rate, 24);
  wav.writeUInt32LE(rate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'latin1');
  wav.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) wav.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  return put(wav, 'audio/wav');
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!condition()) throw new Error('condition not met in 5 s');
}
