import type { Artifact } from '../../contract';
import type { Micros } from '../../engine';
import { AppError } from '../../platform/app-error';
import { defineNode, type NodeContext, type NodeDefinition } from '../node-definition';
import { invalidInput, type NodeInputs, type NodeOutputs } from '../node-inputs';
import { connector, ports } from '../spec-builders';
import { estimateTokens, tokenCostMicros, type ModelPrice, type TokenUsage } from './llm-pricing';

/** What an LLM node asks its provider for, after its inputs are checked. */
export interface LlmRequest {
  model: string;
  prompt: string;
  system: string | undefined;
  temperature: number;
  maxTokens: number;
  /** The call's worst case in tokens, prompt and answer (drawn from the provider's tokens-per-minute limit until the answer reports its usage). */
  worstCaseTokens?: number;
  /** A JSON Schema the answer must follow (structured output), or undefined for free text. */
  schema: Record<string, unknown> | undefined;
  /** An image sent with the prompt (vision), as each provider's wire format wants it inline. */
  image?: LlmImage;
}

/** An image input's bytes and media type (one of `VISION_MIME_TYPES`). */
export interface LlmImage {
  mimeType: string;
  base64: string;
}

/** The formats both OpenAI and Anthropic take as image input. */
export const VISION_MIME_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
/**
 * Tokens reserved for one image input: OpenAI bills a high-detail image at most 85 + 170 per
 * 512-px tile (1,445 for the largest it keeps), Anthropic about width × height / 750 (about
 * 1,600 at its 1.15-megapixel cap); the reservation takes the larger with a margin.
 */
export const IMAGE_INPUT_TOKENS = 2000;

/** What a provider call returns: the whole answer (JSON text when a schema was given) and its usage. */
export interface LlmResult {
  text: string;
  /** Undefined when the provider did not report it; the call is then charged its worst case. */
  usage: TokenUsage | undefined;
  /** The provider's stop reason (`length`, `max_tokens` when the answer was cut off). */
  stopReason: string | undefined;
}

/**
 * Streams one completion; calls `onText` with every piece of the answer as it arrives. An answer
 * the provider sent but that is no completion fails (`malformed_provider_response`, or
 * `bad_request` for a refusal) carrying the `usage` it reported, if any, so that it is priced.
 */
export type LlmCall = (request: LlmRequest, signal: AbortSignal, onText: (delta: string) => void) => Promise<LlmResult>;

/** What an LLM provider's node is built from (configuration, read by llm-provider-nodes.ts). */
export interface LlmNodeSettings {
  apiKey: string;
  /** The provider's API root; each adapter appends its own path. */
  baseUrl: string;
  /** The selectable models, the first the default; each must have a price. */
  models: readonly string[];
  prices: ReadonlyMap<string, ModelPrice>;
  timeoutMs: number;
  progressIntervalMs?: number;
}

export interface LlmNodeOptions {
  id: string;
  title: string;
  description: string;
  /** Named in messages, e.g. `openai`. */
  provider: string;
  /** The selectable models, the first the default; each must have a price. */
  models: readonly string[];
  /** Token prices by model; or `cost` instead (a catalog entry's formula). */
  prices?: ReadonlyMap<string, ModelPrice>;
  /** The cost of a call's usage on these inputs: the worst case for the `estimate`, as reported for the `actual` price; defaults to `prices`. */
  cost?: (inputs: NodeInputs, usage: TokenUsage, phase: 'estimate' | 'actual') => Micros;
  /** Takes an optional IMAGE input sent with the prompt (vision models). */
  vision?: boolean;
  /** Most characters of the prompt, where the model has a limit. */
  maxPromptLength?: number;
  category?: string;
  example?: Record<string, unknown>;
  /** See `NodeDefinition.revision`. */
  revision?: string;
  maxTemperature: number;
  /** Upper bound of the `maxTokens` port. */
  maxOutputTokens: number;
  /** Tokens the provider adds around the prompt (message framing; a tool definition with a schema). */
  overheadTokens: (hasSchema: boolean) => number;
  call: LlmCall;
  /** Least time between two progress events while streaming (default 500 ms). */
  progressIntervalMs?: number;
}

const DEFAULT_MAX_TOKENS = 1024;

/** The text of a value input (a reference may deliver any JSON), for counting and sending. */
const asText = (value: unknown): string => (typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value));

function schemaOf(node: string, value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidInput(node, 'schema', 'must be a JSON Schema object, e.g. {"type":"object","properties":{…}}');
  return value as Record<string, unknown>;
}

/** Progress while streaming: "received 1,234 characters", at most one event per interval. */
function progressReporter(ctx: NodeContext, intervalMs: number) {
  let chars = 0;
  let reported = 0;
  let last = Date.now();
  return {
    onText(delta: string): void {
      chars += delta.length;
      const now = Date.now();
      if (now - last < intervalMs || chars === reported) return;
      last = now;
      reported = chars;
      ctx.progress(`received ${chars.toLocaleString('en-US')} characters`);
    },
    get chars() {
      return chars;
    },
  };
}

/**
 * An LLM node (kind `llm`) over one provider call: its spec (prompt, system, model, temperature,
 * maxTokens, schema → text, data, usage), token pricing and streaming progress.
 *
 * Estimate: the prompt's conservative token count (`estimateTokens`) plus the provider's
 * overhead at the input price, plus `maxTokens` at the output price. Price: the usage the
 * provider reported at the same prices (defineNode keeps it at or under the estimate).
 */
export function llmNode(options: LlmNodeOptions): NodeDefinition {
  const { id, provider, models } = options;
  const priceOf = (model: unknown): ModelPrice => {
    const price = typeof model === 'string' ? options.prices?.get(model) : undefined;
    if (!price) throw invalidInput(id, 'model', `must be one of: ${models.join(', ')}`);
    return price;
  };
  const cost = (inputs: NodeInputs, usage: TokenUsage, phase: 'estimate' | 'actual' = 'actual'): Micros =>
    options.cost ? options.cost(inputs, usage, phase) : tokenCostMicros(priceOf(inputs.model), usage);
  const worstUsage = (inputs: NodeInputs): TokenUsage => {
    const schema = inputs.schema ?? undefined;
    const texts = [asText(inputs.prompt), asText(inputs.system), schema === undefined ? '' : JSON.stringify(schema)];
    const imageTokens = options.vision && inputs.image !== undefined && inputs.image !== null ? IMAGE_INPUT_TOKENS : 0;
    return { inputTokens: estimateTokens(texts) + options.overheadTokens(schema !== undefined) + imageTokens, outputTokens: Number(inputs.maxTokens) || DEFAULT_MAX_TOKENS };
  };
  const estimate = (inputs: NodeInputs): Micros => cost(inputs, worstUsage(inputs), 'estimate');

  return defineNode({
    spec: {
      id,
      kind: 'llm',
      title: options.title,
      category: options.category ?? 'llm',
      description: options.description,
      ...(options.example ? { example: options.example } : {}),
      inputs: ports({
        prompt: connector('TEXT', options.maxPromptLength === undefined ? {} : { maxLength: options.maxPromptLength }),
        system: connector('TEXT', { isOptional: true }),
        model: connector('TEXT', { defaultValue: models[0], optionValues: [...models] }),
        temperature: connector('FLOAT', { defaultValue: Math.min(1, options.maxTemperature), minValue: 0, maxValue: options.maxTemperature }),
        maxTokens: connector('INT', { defaultValue: Math.min(DEFAULT_MAX_TOKENS, options.maxOutputTokens), minValue: 1, maxValue: options.maxOutputTokens }),
        schema: connector('STRUCTURED', { isOptional: true }),
        ...(options.vision ? { image: connector('IMAGE', { isOptional: true }) } : {}),
      }),
      outputs: ports({
        text: connector('TEXT'),
        data: connector('STRUCTURED', { isOptional: true }),
        usage: connector('STRUCTURED'),
      }),
    },
    estimate,
    ...(options.revision === undefined ? {} : { revision: options.revision }),
    // Temperature 0 makes the answer (nearly) repeatable, not certain: cached only when the caller asks.
    cache: { kind: 'whenAsked', eligible: (inputs) => inputs.temperature === 0 },
    price(inputs, outputs: NodeOutputs) {
      const usage = outputs.usage as Partial<TokenUsage> | undefined;
      if (!usage || !Number.isSafeInteger(usage.inputTokens) || !Number.isSafeInteger(usage.outputTokens)) return estimate(inputs);
      return cost(inputs, usage as TokenUsage);
    },
    async execute(inputs, ctx) {
      const request: LlmRequest = {
        model: inputs.model as string,
        prompt: inputs.prompt as string,
        system: inputs.system === undefined || inputs.system === '' ? undefined : (inputs.system as string),
        temperature: inputs.temperature as number,
        maxTokens: inputs.maxTokens as number,
        schema: schemaOf(id, inputs.schema),
      };
      const worst = worstUsage(inputs);
      request.worstCaseTokens = worst.inputTokens + worst.outputTokens;
      if (options.vision && inputs.image !== undefined && inputs.image !== null) request.image = await imageOf(id, inputs.image as Artifact, ctx);
      const progress = progressReporter(ctx, options.progressIntervalMs ?? 500);
      const result = await options.call(request, ctx.signal, (delta) => progress.onText(delta)).catch((err: unknown) => {
        throw priced(err, (usage) => Math.min(cost(inputs, usage), estimate(inputs)));
      });
      const reported = result.usage !== undefined;
      const usage = result.usage ?? worstUsage(inputs);
      ctx.progress(`received ${progress.chars.toLocaleString('en-US')} characters, ${usage.inputTokens} input and ${usage.outputTokens} output tokens${reported ? '' : ' (not reported; charged as estimated)'}`);
      const outputs: NodeOutputs = { text: result.text, usage: { model: request.model, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens } };
      if (request.schema) outputs.data = parseAnswer(provider, result, Math.min(cost(inputs, usage), estimate(inputs)));
      return outputs;
    },
  });
}

/** The image input's bytes, inline for the provider; a format neither provider reads is the caller's to fix. */
async function imageOf(node: string, artifact: Artifact, ctx: NodeContext): Promise<LlmImage> {
  const file = await ctx.artifacts.read(artifact);
  if (!VISION_MIME_TYPES.includes(file.mimeType)) throw invalidInput(node, 'image', `is ${file.mimeType}; give one of ${VISION_MIME_TYPES.join(', ')} (the image-convert node converts)`);
  if (file.bytes.length > MAX_VISION_BYTES) throw invalidInput(node, 'image', `is ${file.bytes.length} bytes; the limit is ${MAX_VISION_BYTES} (the image-resize node makes it smaller)`);
  return { mimeType: file.mimeType, base64: file.bytes.toString('base64') };
}

/** Anthropic takes images of at most 5 MB; OpenAI 20 MB: the smaller limit holds for both. */
const MAX_VISION_BYTES = 5 * 1024 * 1024;

/**
 * A failed call that carries the usage its provider reported (it answered, then its answer proved
 * unusable) is charged that usage's price: the step executor charges a failed attempt its
 * `costMicros`. Without usage, an answered call is marked `outcomeUnknown` and charged the estimate.
 */
function priced(err: unknown, cost: (usage: TokenUsage) => Micros): unknown {
  const usage = (err as { usage?: TokenUsage } | null)?.usage;
  return usage && err instanceof Error ? Object.assign(err, { costMicros: cost(usage) }) : err;
}

/** The structured answer; an answer that is not JSON fails the step (`bad_request`), charged for its tokens. */
function parseAnswer(provider: string, result: LlmResult, costMicros: Micros): unknown {
  try {
    return JSON.parse(result.text) as unknown;
  } catch {
    const cut = result.stopReason === 'length' || result.stopReason === 'max_tokens';
    const error = new AppError({
      code: 'bad_request',
      message: `${provider} answered with text that is not valid JSON for the given schema${cut ? ' (the answer was cut off at maxTokens; raise it)' : ''}: ${result.text.slice(0, 200)}`,
    });
    // The tokens were spent: the step executor charges a failed attempt its `costMicros`.
    throw Object.assign(error, { costMicros });
  }
}
