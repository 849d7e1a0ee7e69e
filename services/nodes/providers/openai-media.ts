import type { NodeDefinition } from '../node-definition';
import { openaiSpeechNode, openaiTranscribeNode } from './openai-audio';
import type { OpenAiMediaSettings } from './openai-client';
import { openaiEmbeddingNode } from './openai-embeddings';
import { openaiImageNode } from './openai-images';

export type { OpenAiMediaSettings } from './openai-client';

/**
 * The OpenAI(-compatible) media nodes: `openai-image`, `openai-embed`, `openai-speech`,
 * `openai-transcribe`. None without a key; each only when its price list names a model.
 */
export function openaiMediaNodes(settings: OpenAiMediaSettings): NodeDefinition[] {
  if (!settings.apiKey) return [];
  const nodes: NodeDefinition[] = [];
  if (Object.keys(settings.imagePrices).length > 0) nodes.push(openaiImageNode(settings));
  if (Object.keys(settings.embeddingPrices).length > 0) nodes.push(openaiEmbeddingNode(settings));
  if (Object.keys(settings.ttsPrices).length > 0 && settings.ttsVoices.length > 0) nodes.push(openaiSpeechNode(settings));
  if (Object.keys(settings.transcribePrices).length > 0) nodes.push(openaiTranscribeNode(settings));
  return nodes;
}
