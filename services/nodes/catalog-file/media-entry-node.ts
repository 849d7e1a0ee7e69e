import type { Artifact, Connector } from '../../contract';
import type { Micros } from '../../engine';
import { sniffMimeType } from '../fetch/sniff-mime';
import { lookupJsonPath, parseJsonPath, type PathSegment } from '../json-path';
import { MAX_IMAGE_BYTES } from '../limits';
import { defineNode, type NodeContext, type NodeDefinition } from '../node-definition';
import { invalidInput, type NodeInputs, type NodeOutputs } from '../node-inputs';
import { connector, ports } from '../spec-builders';
import { FAL, falQueueRequest, type FalConnection } from '../providers/fal-queue';
import { rehostImage, resultFileBytes } from '../providers/media-rehost';
import { malformedResponse } from '../providers/provider-response';
import { REPLICATE, replicatePrediction, type ReplicateConnection } from '../providers/replicate';
import type { InputPortEntry, MediaCatalogEntry, OutputPortEntry } from './catalog-entry';
import { MEASURED } from './entry-variables';
import { formulaMicros, parsePriceFormula } from './price-formula';

/** Largest video or audio result re-hosted, and largest media input sent inline (a data: URI). */
const MAX_MEDIA_RESULT_BYTES = 512 * 1024 * 1024;
const MAX_INLINE_INPUT_BYTES = 32 * 1024 * 1024;
const MEDIA_INPUTS = new Set(['IMAGE', 'AUDIO', 'VIDEO']);

/**
 * How a media entry reaches its provider: `run` does one job and gives its answer (fal: the
 * result JSON; Replicate: the prediction's output) and what it measured; result files on
 * `baseUrl`'s origin are read as the provider is, others through the safe fetching.
 */
export interface MediaJob {
  provider: string;
  baseUrl: string;
  timeoutMs: number;
  run(input: Record<string, unknown>, ctx: NodeContext): Promise<{ answer: unknown; measured: Record<string, number> }>;
}

export function falJob(connection: FalConnection, app: string): MediaJob {
  return { provider: FAL, baseUrl: connection.baseUrl, timeoutMs: connection.timeoutMs, run: async (input, ctx) => ({ answer: await falQueueRequest(connection, app, input, ctx), measured: {} }) };
}

export function replicateJob(connection: ReplicateConnection, model: string): MediaJob {
  return { provider: REPLICATE, baseUrl: connection.baseUrl, timeoutMs: connection.timeoutMs, run: async (input, ctx) => {
    const prediction = await replicatePrediction(connection, model, input, ctx);
    const metrics = prediction.metrics ?? {};
    const measured: Record<string, number> = {};
    for (const [name, key] of [['seconds', 'predict_time'], ['input_tokens', 'input_token_count'], ['output_tokens', 'output_token_count']] as const) {
      const value = metrics[key];
      if (typeof value === 'number' && Number.isFinite(value) && value >= 0) measured[name] = value;
    }
    return { answer: prediction.output, measured };
  } };
}

/** The usage output every media entry has: what its price read. */
const USAGE = 'usage';

/**
 * A node from a fal or Replicate catalog entry: its ports as the entry declares them (plus
 * `usage`, the measures its price reads), the provider input built from its inputs, the outputs
 * found in the answer by their paths, media re-hosted in our store; an output the answer lacks
 * is a malformed answer (charged, as any). Priced by the entry's formulas; a measure the answer
 * did not give costs the estimate.
 */
export function mediaEntryNode(entry: MediaCatalogEntry, job: MediaJob, revision: string): NodeDefinition {
  const providerName = job.provider;
  const estimateFormula = parsePriceFormula(entry.price.estimate);
  const actualFormula = parsePriceFormula(entry.price.actual);
  const fieldOf = new Map(Object.entries(entry.request?.fields ?? {}).map(([field, port]) => [port, field]));
  const paths = Object.fromEntries(Object.entries(entry.outputs).map(([name, port]) => [name, { from: segments(port.from), item: port.item === undefined ? undefined : segments(port.item) }]));
  const estimate = (inputs: NodeInputs): Micros => formulaMicros(estimateFormula, inputs, 'price.estimate');

  return defineNode({
    spec: {
      id: entry.id,
      kind: 'model',
      title: entry.title,
      category: entry.category,
      description: entry.description,
      ...(entry.example ? { example: entry.example } : {}),
      inputs: ports(Object.fromEntries(Object.entries(entry.inputs).map(([name, port]) => [name, inputConnector(port)]))),
      outputs: ports({
        ...Object.fromEntries(Object.entries(entry.outputs).map(([name, port]) => [name, connector(port.type, { isOptional: port.optional ?? false, isArray: port.array ?? false })])),
        [USAGE]: connector('STRUCTURED'),
      }),
    },
    revision,
    estimate,
    price(inputs, outputs: NodeOutputs) {
      const measured = (outputs[USAGE] ?? {}) as Record<string, unknown>;
      const values: Record<string, unknown> = { ...inputs };
      for (const name of Object.keys(entry.outputs)) values[name] = countOf(outputs[name]);
      for (const name of actualFormula.variables) {
        if (!MEASURED[entry.provider].includes(name)) continue;
        if (typeof measured[name] !== 'number') return estimate(inputs);
        values[name] = measured[name];
      }
      return formulaMicros(actualFormula, values, 'price.actual');
    },
    async execute(inputs, ctx) {
      const input: Record<string, unknown> = {};
      for (const [name, port] of Object.entries(entry.inputs)) {
        const value = inputs[name];
        if (value === undefined || value === null) continue;
        input[fieldOf.get(name) ?? name] = MEDIA_INPUTS.has(port.type) ? await inlineMedia(entry.id, name, value, ctx) : value;
      }
      // Fixed fields last: an input cannot override what the entry pins (a size its price assumes).
      Object.assign(input, entry.request?.fixed ?? {});
      const { answer, measured } = await job.run(input, ctx);
      const outputs: NodeOutputs = {};
      let megapixels = 0;
      for (const [name, port] of Object.entries(entry.outputs)) {
        const found = lookupJsonPath(answer, paths[name]!.from);
        if (!found.found || found.value === null || found.value === undefined) {
          if (port.optional) continue;
          throw malformedResponse(providerName, `an answer without "${port.from}" (output "${name}" of ${entry.id})`);
        }
        const convert = (value: unknown) => outputValue(job, entry.id, name, port, value, ctx);
        if (port.array) {
          const items = Array.isArray(found.value) ? found.value : [found.value];
          const values: unknown[] = [];
          for (const item of items) {
            const at = paths[name]!.item;
            const inner = at === undefined ? { found: true as const, value: item } : lookupJsonPath(item, at);
            if (!inner.found) throw malformedResponse(providerName, `an item of "${port.from}" without "${port.item}" (output "${name}" of ${entry.id})`);
            values.push(await convert(inner.value));
          }
          if (values.length === 0 && !port.optional) throw malformedResponse(providerName, `an empty "${port.from}" (output "${name}" of ${entry.id})`);
          outputs[name] = values;
        } else {
          outputs[name] = await convert(Array.isArray(found.value) && !['TEXT', 'STRUCTURED', 'EMBEDDING'].includes(port.type) ? found.value[0] : found.value);
        }
        if (port.type === 'IMAGE') megapixels += [outputs[name]].flat().reduce((sum: number, image) => sum + pixelsOf(image) / 1_000_000, 0);
      }
      outputs[USAGE] = { model: entry.model, ...(MEASURED[entry.provider].includes('megapixels') ? { megapixels: Number(megapixels.toFixed(6)) } : {}), ...measured };
      return outputs;
    },
  });
}

/** The connector of an entry's input port: its type and constraints. */
export function inputConnector(port: InputPortEntry): Connector {
  return connector(port.type, {
    ...(port.optional !== undefined ? { isOptional: port.optional } : {}),
    ...(port.array !== undefined ? { isArray: port.array } : {}),
    ...(port.default !== undefined ? { defaultValue: port.default } : {}),
    ...(port.options !== undefined ? { optionValues: port.options } : {}),
    ...(port.min !== undefined ? { minValue: port.min } : {}),
    ...(port.max !== undefined ? { maxValue: port.max } : {}),
    ...(port.maxLength !== undefined ? { maxLength: port.maxLength } : {}),
  });
}

function segments(path: string): PathSegment[] {
  const parsed = parseJsonPath(path);
  // readCatalogFile has checked every path.
  if (!parsed.ok) throw new Error(`invalid path "${path}": ${parsed.message}`);
  return parsed.segments;
}

const countOf = (value: unknown): number => (value === undefined || value === null ? 0 : Array.isArray(value) ? value.length : 1);

function pixelsOf(image: unknown): number {
  const meta = (image as Artifact | undefined)?.metadata as { width?: number; height?: number } | undefined;
  return (meta?.width ?? 0) * (meta?.height ?? 0);
}

/** A media input as providers take files inline: a data: URI of its bytes. */
async function inlineMedia(node: string, port: string, value: unknown, ctx: NodeContext): Promise<string | string[]> {
  const one = async (artifact: Artifact) => {
    const file = await ctx.artifacts.read(artifact);
    if (file.bytes.length > MAX_INLINE_INPUT_BYTES) throw invalidInput(node, port, `is ${file.bytes.length} bytes; the limit is ${MAX_INLINE_INPUT_BYTES}`);
    return `data:${file.mimeType};base64,${file.bytes.toString('base64')}`;
  };
  return Array.isArray(value) ? Promise.all(value.map((item) => one(item as Artifact))) : one(value as Artifact);
}

/** One value found in the answer as the port's type: media re-hosted in our store, the rest checked. */
async function outputValue(job: MediaJob, node: string, name: string, port: OutputPortEntry, value: unknown, ctx: NodeContext): Promise<unknown> {
  const { provider } = job;
  const wrong = (what: string) => malformedResponse(provider, `${what} for output "${name}" of ${node}`);
  switch (port.type) {
    case 'IMAGE':
    case 'VIDEO':
    case 'AUDIO': {
      // fal gives files as { url, content_type, ... }; Replicate as URL strings; OpenAI images as { b64_json } or { url }.
      const file = value as { url?: unknown; b64_json?: unknown } | null;
      const url = typeof value === 'string' ? value : typeof file?.url === 'string' ? file.url : typeof file?.b64_json === 'string' ? `data:application/octet-stream;base64,${file.b64_json}` : undefined;
      if (url === undefined) throw wrong(`${JSON.stringify(value)?.slice(0, 80)} where a file URL was expected`);
      const source = { provider, signal: ctx.signal, timeoutMs: job.timeoutMs, baseUrl: job.baseUrl, artifacts: ctx.artifacts };
      return rehost(provider, port.type, await resultFileBytes(source, url, port.type === 'IMAGE' ? MAX_IMAGE_BYTES : MAX_MEDIA_RESULT_BYTES), ctx, wrong);
    }
    case 'TEXT':
      if (typeof value === 'string') return value;
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(port.join ?? '');
      throw wrong('a value that is not text');
    case 'EMBEDDING':
      if (Array.isArray(value) && value.length > 0 && value.every((n) => typeof n === 'number' && Number.isFinite(n))) return value;
      throw wrong('a value that is not a list of numbers');
    case 'INT':
      if (Number.isSafeInteger(value)) return value;
      throw wrong('a value that is not an integer');
    case 'FLOAT':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      throw wrong('a value that is not a number');
    case 'BOOLEAN':
      if (typeof value === 'boolean') return value;
      throw wrong('a value that is not true or false');
    default:
      return value;
  }
}

async function rehost(provider: string, type: 'IMAGE' | 'VIDEO' | 'AUDIO', bytes: Buffer, ctx: NodeContext, wrong: (what: string) => Error): Promise<Artifact> {
  if (type === 'IMAGE') return rehostImage(provider, bytes, ctx);
  const mimeType = sniffMimeType(bytes);
  const top = type === 'VIDEO' ? 'video/' : 'audio/';
  // An MP4 holding only audio sniffs as video/mp4: an AUDIO port takes it as audio/mp4.
  const typed = mimeType === 'video/mp4' && type === 'AUDIO' ? 'audio/mp4' : mimeType;
  if (!typed?.startsWith(top)) throw wrong(`a file of type ${mimeType ?? 'unknown'} where ${type.toLowerCase()} was expected`);
  ctx.signal.throwIfAborted();
  return ctx.artifacts.put(bytes, { mimeType: typed, metadata: { bytes: bytes.length } });
}
