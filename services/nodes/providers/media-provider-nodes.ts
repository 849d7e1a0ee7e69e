import type { Config } from '../../platform/config';
import type { NodeDefinition } from '../node-definition';
import { falImageNode } from './fal-queue';
import { openaiMediaNodes } from './openai-media';
import { replicateImageNode } from './replicate';

/** The settings the hosted media nodes read (OpenAI images/speech/embeddings, fal, Replicate). */
export type MediaProviderSettings = Pick<
  Config,
  | 'openaiApiKey'
  | 'openaiBaseUrl'
  | 'providerTimeoutMs'
  | 'providerPollMs'
  | 'openaiImagePrices'
  | 'openaiEmbeddingPrices'
  | 'openaiTtsPrices'
  | 'openaiTtsVoices'
  | 'openaiTranscribePrices'
  | 'falKey'
  | 'falBaseUrl'
  | 'falApps'
  | 'replicateApiToken'
  | 'replicateBaseUrl'
  | 'replicateModels'
>;

/**
 * The hosted media nodes whose provider has a key: `openai-image`, `openai-embed`,
 * `openai-speech`, `openai-transcribe` (OPENAI_API_KEY), `fal-image` (FAL_KEY) and
 * `replicate-image` (REPLICATE_API_TOKEN). A provider without a key adds nothing.
 */
export function mediaProviderNodes(config: MediaProviderSettings): NodeDefinition[] {
  const nodes = openaiMediaNodes({
    apiKey: config.openaiApiKey,
    baseUrl: config.openaiBaseUrl,
    timeoutMs: config.providerTimeoutMs,
    imagePrices: config.openaiImagePrices,
    embeddingPrices: config.openaiEmbeddingPrices,
    ttsPrices: config.openaiTtsPrices,
    ttsVoices: config.openaiTtsVoices,
    transcribePrices: config.openaiTranscribePrices,
  });
  if (config.falKey && Object.keys(config.falApps).length > 0) {
    nodes.push(falImageNode({ key: config.falKey, baseUrl: config.falBaseUrl, apps: config.falApps, timeoutMs: config.providerTimeoutMs, pollMs: config.providerPollMs }));
  }
  if (config.replicateApiToken && Object.keys(config.replicateModels).length > 0) {
    nodes.push(replicateImageNode({ token: config.replicateApiToken, baseUrl: config.replicateBaseUrl, models: config.replicateModels, timeoutMs: config.providerTimeoutMs, pollMs: config.providerPollMs }));
  }
  return nodes;
}
