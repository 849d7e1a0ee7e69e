import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { parse as parseYaml } from 'yaml';
import { BlobUrlSigner, FsBlobStore } from '../../services/blobs';
import type { Artifact, RunEvent } from '../../services/contract';
import { BlobArtifactStore, localToolNodes, type NodeDefinition } from '../../services/nodes';
import { runTool, ToolError } from '../../services/nodes/tools';
import { eventually } from '../support/eventually';
import { nodeContext } from '../support/node-harness';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

const BASE = 'http://svc.test';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-local-tools-'));
const artifacts = new BlobArtifactStore({
  store: new FsBlobStore(path.join(tmp, 'blobs')),
  signer: new BlobUrlSigner({ publicBaseUrl: BASE, secret: 'k'.repeat(40) }),
  publicBaseUrl: BASE,
  keyPrefix: 'runs/local-tools',
  urlTtlSeconds: 600,
});
const ctx = (signal?: AbortSignal) => nodeContext(signal, artifacts);

let nodes: Map<string, NodeDefinition>;
const node = (id: string): NodeDefinition => {
  const found = nodes.get(id);
  if (!found) throw new Error(`local tool node ${id} is not available; install espeak-ng ffmpeg tesseract-ocr tesseract-ocr-eng`);
  return found;
};

/** Media made by ffmpeg's own generators (lavfi), outside the nodes. */
function generate(name: string, args: string[]): Buffer {
  const file = path.join(tmp, name);
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args, file]);
  return fs.readFileSync(file);
}

async function probe(input: Record<string, Artifact>) {
  const out = await node('media-probe').execute(input, ctx());
  return out.info as { durationSeconds: number; width: number | null; height: number | null; audioCodec: string | null; videoCodec: string | null };
}

async function bytesOf(artifact: unknown): Promise<Buffer> {
  return (await artifacts.read(artifact as Artifact)).bytes;
}

/** Processes whose command line contains `marker` (ours or orphaned). */
function processesWith(marker: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

beforeAll(async () => {
  nodes = new Map((await localToolNodes()).map((n) => [n.spec.id, n]));
});

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('local tool nodes with the real programs', () => {
  it('lists every local tool node when espeak-ng, ffmpeg and tesseract are installed', () => {
    expect([...nodes.keys()].sort()).toEqual(
      ['audio-concat', 'audio-convert', 'audio-trim', 'audio-waveform', 'media-probe', 'ocr-tesseract', 'speech-espeak', 'video-frames', 'video-thumbnail'],
    );
    expect(nodes.get('ocr-tesseract')!.spec.inputs.language!.connector.optionValues).toContain('eng');
  });

  it('speaks text as a real wav and a real mp3 whose durations media-probe reads back', async () => {
    const text = 'Hello from the workflow service. This sentence is spoken by espeak.';
    const wav = (await node('speech-espeak').execute({ text }, ctx())).audio as Artifact & { metadata: { durationSeconds: number } };
    expect(wav).toMatchObject({ kind: 'audio', mimeType: 'audio/wav', metadata: { format: 'wav' } });
    const wavBytes = await bytesOf(wav);
    expect(wavBytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(wavBytes.subarray(8, 12).toString('latin1')).toBe('WAVE');
    expect(wav.metadata.durationSeconds).toBeGreaterThan(1);

    const mp3 = (await node('speech-espeak').execute({ text, voice: 'en-gb', speed: 300, format: 'mp3' }, ctx())).audio as Artifact;
    expect(mp3).toMatchObject({ kind: 'audio', mimeType: 'audio/mpeg', metadata: { format: 'mp3' } });
    const mp3Bytes = await bytesOf(mp3);
    // An ID3 tag or an MPEG frame sync.
    expect(mp3Bytes.subarray(0, 3).toString('latin1') === 'ID3' || (mp3Bytes[0] === 0xff && (mp3Bytes[1]! & 0xe0) === 0xe0)).toBe(true);
    const info = await probe({ audio: mp3 });
    expect(info).toMatchObject({ audioCodec: 'mp3', videoCodec: null, width: null });
    expect(info.durationSeconds).toBeGreaterThan(0.5);
    // Faster speech is shorter.
    expect(info.durationSeconds).toBeLessThan(wav.metadata.durationSeconds);
    expect(node('speech-espeak').price({ text }, { audio: mp3 })).toBe(51);
  });

  it('reads the text of an image rendered by sharp', async () => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="120"><rect width="100%" height="100%" fill="white"/>
      <text x="20" y="75" font-family="DejaVu Sans, sans-serif" font-size="44" fill="black">Workflow 42 ready</text></svg>`;
    const png = await sharp(Buffer.from(svg)).png().toBuffer();
    const image = await artifacts.put(png, { mimeType: 'image/png' });
    const out = await node('ocr-tesseract').execute({ image }, ctx());
    expect(out.text).toBe('Workflow 42 ready');
  });

  it('trims, joins and converts audio to the expected durations', async () => {
    const tone = await artifacts.put(generate('tone.wav', ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=3']), { mimeType: 'audio/wav' });
    const trimmed = (await node('audio-trim').execute({ audio: tone, start: 1, duration: 1.5, format: 'wav' }, ctx())).audio as Artifact;
    expect((await probe({ audio: trimmed })).durationSeconds).toBeCloseTo(1.5, 1);
    const tail = (await node('audio-trim').execute({ audio: tone, start: 2.5, format: 'ogg' }, ctx())).audio as Artifact;
    expect(tail).toMatchObject({ mimeType: 'audio/ogg' });
    expect((await probe({ audio: tail })).durationSeconds).toBeCloseTo(0.5, 1);

    const joined = (await node('audio-concat').execute({ audio: [tone, trimmed, tone], format: 'mp3' }, ctx())).audio as Artifact & { metadata: { durationSeconds: number } };
    expect(joined.metadata.durationSeconds).toBeGreaterThan(7.4);
    expect(joined.metadata.durationSeconds).toBeLessThan(7.7);
    expect(node('audio-concat').price({}, { audio: joined })).toBe(50 + 3); // 7.5 s: 2.5 micro-USD, rounded up

    const converted = (await node('audio-convert').execute({ audio: joined, format: 'ogg', bitrate: 64 }, ctx())).audio as Artifact;
    expect(await probe({ audio: converted })).toMatchObject({ audioCodec: 'vorbis' });
    await expect(node('audio-concat').execute({ audio: [tone] }, ctx())).rejects.toThrow('give 2 to 50');
    await expect(node('audio-convert').execute({ audio: await artifacts.put(Buffer.from('not audio at all'), { mimeType: 'audio/wav' }) }, ctx())).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });

  it('draws a waveform image of audio', async () => {
    const tone = await artifacts.put(generate('tone2.wav', ['-f', 'lavfi', '-i', 'sine=frequency=220:duration=1']), { mimeType: 'audio/wav' });
    const out = (await node('audio-waveform').execute({ audio: tone, width: 400, height: 100 }, ctx())).image as Artifact;
    const meta = await sharp(await bytesOf(out)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 400, 100]);
    await expect(node('audio-waveform').execute({ audio: tone, color: 'red:s=9999x9999' }, ctx())).rejects.toThrow('#rrggbb');
  });

  it('takes a thumbnail and frames from a video and probes its size and duration', async () => {
    const mp4 = generate('clip.mp4', ['-f', 'lavfi', '-i', 'testsrc=duration=2:size=160x120:rate=10', '-pix_fmt', 'yuv420p', '-c:v', 'libx264']);
    const video = await artifacts.put(mp4, { mimeType: 'video/mp4' });
    expect(await probe({ video })).toMatchObject({ width: 160, height: 120, videoCodec: 'h264', durationSeconds: 2 });

    const thumb = (await node('video-thumbnail').execute({ video, at: 1, format: 'jpeg' }, ctx())).image as Artifact;
    expect(thumb).toMatchObject({ kind: 'image', mimeType: 'image/jpeg', metadata: { width: 160, height: 120 } });
    expect((await sharp(await bytesOf(thumb)).metadata()).format).toBe('jpeg');
    await expect(node('video-thumbnail').execute({ video, at: 5 }, ctx())).rejects.toThrow("past the video's end");

    const frames = (await node('video-frames').execute({ video, fps: 2, maxFrames: 3 }, ctx())).frames as Artifact[];
    expect(frames).toHaveLength(3);
    expect(frames[0]).toMatchObject({ kind: 'image', mimeType: 'image/png', metadata: { width: 160, height: 120 } });
    expect(node('video-frames').price({ maxFrames: 3 }, { frames })).toBe(80);

    const still = await artifacts.put(await sharp({ create: { width: 30, height: 20, channels: 3, background: '#000' } }).png().toBuffer(), { mimeType: 'image/png' });
    expect(await probe({ image: still })).toMatchObject({ width: 30, height: 20, durationSeconds: 0 });
    await expect(node('media-probe').execute({ image: still, video }, ctx())).rejects.toThrow('give exactly one');
  });

  it('refuses playlists that would make ffmpeg read other files', async () => {
    const playlist = Buffer.from('#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n/etc/passwd\n#EXT-X-ENDLIST\n');
    const audio = await artifacts.put(playlist, { mimeType: 'audio/wav' });
    await expect(node('audio-convert').execute({ audio, format: 'wav' }, ctx())).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('kills a long ffmpeg job and its process group promptly when aborted', async () => {
    const marker = `sine=frequency=1234:duration=${100_000 + Math.floor(Math.random() * 1000)}`;
    const controller = new AbortController();
    const job = runTool('ffmpeg', ['-hide_banner', '-nostdin', '-re', '-f', 'lavfi', '-i', marker, '-f', 'null', '-'], { signal: controller.signal });
    await eventually(() => processesWith(marker).length === 1, { what: 'ffmpeg to start' });
    expect(processesWith(marker)).toHaveLength(1);
    controller.abort(new Error('cancelled by the test'));
    // The job runs for 100,000 s unless the abort kills it: the rejection and the empty process list are the proof.
    await expect(job).rejects.toThrow('cancelled by the test');
    expect(processesWith(marker)).toEqual([]);

    // A grandchild in the same process group goes too.
    const sleeper = `${200_000 + Math.floor(Math.random() * 1000)}`;
    const group = new AbortController();
    const shell = runTool('sh', ['-c', `sleep ${sleeper} & sleep ${sleeper}`], { signal: group.signal });
    await eventually(() => processesWith(`sleep\0${sleeper}`).length >= 2, { what: 'both sleeps to start' });
    expect(processesWith(`sleep\0${sleeper}`).length).toBeGreaterThanOrEqual(2);
    group.abort(new Error('stop'));
    await expect(shell).rejects.toThrow('stop');
    await eventually(() => processesWith(`sleep\0${sleeper}`).length === 0, { what: 'the grandchild to go' });
    expect(processesWith(`sleep\0${sleeper}`)).toEqual([]);
  });

  it('stops a tool at its time limit and its output cap, with short stderr in the message', async () => {
    await expect(runTool('sleep', ['5'], { timeoutMs: 200 })).rejects.toMatchObject({ reason: 'timeout' });
    await expect(runTool('head', ['-c', '100000', '/dev/zero'], { maxOutputBytes: 1000 })).rejects.toMatchObject({ reason: 'output_too_large' });
    const failed = await runTool('ffmpeg', ['-hide_banner', '-i', path.join(tmp, 'missing.wav')]).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(ToolError);
    expect((failed as ToolError).reason).toBe('exit');
    expect((failed as ToolError).message.length).toBeLessThan(700);
  });

  it('leaves out the nodes whose programs are missing, and says a program is missing when run', async () => {
    expect(await localToolNodes({ path: path.join(tmp, 'empty-bin') })).toEqual([]);
    // Only ffprobe on the PATH: media-probe, nothing that needs ffmpeg, espeak-ng or tesseract.
    const bin = path.join(tmp, 'probe-only-bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(execFileSync('sh', ['-c', 'command -v ffprobe']).toString().trim(), path.join(bin, 'ffprobe'));
    expect((await localToolNodes({ path: bin })).map((n) => n.spec.id)).toEqual(['media-probe']);
    await expect(runTool('no-such-tool-svc', [])).rejects.toMatchObject({ reason: 'missing', message: 'no-such-tool-svc is not installed' });
  });
});

describe('the README example workflow (local nodes only) through POST /v1/runs', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  it('turns text into an mp3 and a resized webp waveform, served from the service’s own URLs', async () => {
    const catalog = (await (await fetch(`${service.url}/v1/nodes`)).json()) as { id: string }[];
    expect(catalog.map((n) => n.id)).toEqual(expect.arrayContaining(['speech-espeak', 'ocr-tesseract', 'audio-convert', 'video-thumbnail', 'media-probe']));

    // Kept in step with README.md, "Run a workflow of local nodes".
    const workflow = JSON.parse(fs.readFileSync(path.join(__dirname, '../../docs/examples/local-speech.json'), 'utf8')) as unknown;
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify(workflow),
    });
    expect(res.status).toBe(200);
    const messages = await readSse(res);
    expect(messages.at(-1)?.data).toBe('[DONE]');
    const events = messages.slice(0, -1).map((m) => JSON.parse(m.data) as RunEvent);
    const terminal = events.at(-1) as { type: string; outputs: Record<string, { kind: string; ref: string; mimeType: string; metadata: Record<string, number> }> };
    expect(terminal.type).toBe('run.completed');
    const { speech, waveform, seconds } = terminal.outputs as Record<string, { kind: string; ref: string; mimeType: string; metadata: Record<string, number>; value?: unknown }>;
    expect(speech).toMatchObject({ kind: 'audio', mimeType: 'audio/mpeg' });
    expect(waveform).toMatchObject({ kind: 'image', mimeType: 'image/webp', metadata: { width: 600, height: 150 } });
    expect(seconds!.value).toBeGreaterThan(1);
    const mp3 = Buffer.from(await (await fetch(speech!.ref)).arrayBuffer());
    expect(mp3.length).toBeGreaterThan(1000);
    const webp = await sharp(Buffer.from(await (await fetch(waveform!.ref)).arrayBuffer())).metadata();
    expect([webp.format, webp.width, webp.height]).toEqual(['webp', 600, 150]);
  });

  it('refuses a text over speech-espeak\'s limit before anything runs: its port says the limit, the run is never stored', async () => {
    const spec = (await (await fetch(`${service.url}/v1/nodes?q=speech-espeak`)).json()) as { id: string; inputs: Record<string, { connector: { maxLength?: number } }> }[];
    expect(spec.find((n) => n.id === 'speech-espeak')!.inputs.text!.connector.maxLength).toBe(5000);
    const workflow = parseYaml(fs.readFileSync(path.join(__dirname, '../../docs/examples/local-speech.yaml'), 'utf8')) as unknown;
    const before = await service.prisma.run.count();
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow, inputs: { text: { value: 'a'.repeat(5001) } } }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; code: string };
    expect(body.code).toBe('validation_failed');
    expect(body.error).toContain('must be a TEXT of at most 5000 characters, got 5001');
    expect(await service.prisma.run.count()).toBe(before);
  });

  it('runs the YAML example of the CLI (docs/examples/local-speech.yaml) with a text input', async () => {
    const workflow = parseYaml(fs.readFileSync(path.join(__dirname, '../../docs/examples/local-speech.yaml'), 'utf8')) as unknown;
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ workflow, inputs: { text: { value: 'hello' } } }),
    });
    expect([res.status, res.status === 200 ? '' : await res.text()]).toEqual([200, '']);
    const messages = await readSse(res);
    const terminal = JSON.parse(messages.at(-2)!.data) as { type: string; outputs: Record<string, { kind: string; value?: number }> };
    expect(terminal.type).toBe('run.completed');
    expect(Object.keys(terminal.outputs).sort()).toEqual(['seconds', 'speech', 'waveform']);
    expect(terminal.outputs.seconds!.value).toBeGreaterThan(0.2);
  });
});
