import { ceilMicros } from '../../engine';
import { defineNode, type NodeDefinition } from '../node-definition';
import { connector, ports } from '../spec-builders';
import { offered, priceIn } from './media-rehost';
import { OPENAI, openaiFetch, type OpenAiMediaSettings } from './openai-client';
import { jsonBody, malformedResponse } from './provider-response';

interface EmbeddingsAnswer {
  data?: { embedding?: unknown }[];
  usage?: { prompt_tokens?: number };
}

/** Every BPE token covers at least one byte, so a text's UTF-8 length bounds its token count. */
const maxTokens = (text: unknown) => Buffer.byteLength(String(text), 'utf8');

/** `openai-embed`: POST /embeddings for one text; priced by the tokens the provider reports. */
export function openaiEmbeddingNode(settings: OpenAiMediaSettings): NodeDefinition {
  const prices = settings.embeddingPrices;
  const models = offered(prices);
  return defineNode({
    spec: {
      id: 'openai-embed',
      kind: 'model',
      title: 'Embed text (OpenAI)',
      category: 'text',
      description:
        'Turns "text" into an embedding vector with an OpenAI embedding model; "tokens" is the count the provider billed. ' +
        `Costs per million tokens: ${models.names.map((m) => `${m} ${prices[m]}`).join(', ')} micro-USD (reserved for one token per byte).`,
      inputs: ports({
        text: connector('TEXT'),
        model: connector('TEXT', { defaultValue: models.first, optionValues: models.names }),
        dimensions: connector('INT', { isOptional: true, minValue: 1, maxValue: 8192 }),
      }),
      outputs: ports({ embedding: connector('EMBEDDING'), tokens: connector('INT') }),
    },
    estimate: (inputs) => ceilMicros((maxTokens(inputs.text) * priceIn(prices, inputs.model)) / 1_000_000),
    price: (inputs, outputs) => ceilMicros((Number(outputs.tokens) * priceIn(prices, inputs.model)) / 1_000_000),
    async execute(inputs, ctx) {
      const body: Record<string, unknown> = { model: inputs.model, input: inputs.text, encoding_format: 'float' };
      if (inputs.dimensions !== undefined) body.dimensions = inputs.dimensions;
      const answer = await jsonBody<EmbeddingsAnswer>(await openaiFetch(settings, ctx.signal, '/embeddings', { json: body }), OPENAI);
      const embedding = Array.isArray(answer.data) ? answer.data[0]?.embedding : undefined;
      if (!Array.isArray(embedding) || !embedding.every((n) => typeof n === 'number' && Number.isFinite(n))) throw malformedResponse(OPENAI, 'a body without an embedding of numbers');
      const reported = answer.usage?.prompt_tokens;
      // A server that reports no usage is charged the reserved worst case.
      const tokens = Number.isSafeInteger(reported) && reported! >= 0 ? reported! : maxTokens(inputs.text);
      return { embedding, tokens };
    },
  });
}
