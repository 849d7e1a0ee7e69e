import type { Config } from '../../platform/config';
import type { NodeDefinition } from '../node-definition';
import { anthropicMessagesNode } from './anthropic-messages';
import { modelPrices } from './llm-pricing';
import { openAiChatNode } from './openai-chat';

/** The settings the LLM nodes read. */
export type LlmProviderSettings = Pick<
  Config,
  'openaiApiKey' | 'openaiBaseUrl' | 'openaiModels' | 'openaiPrices' | 'anthropicApiKey' | 'anthropicBaseUrl' | 'anthropicModels' | 'anthropicPrices' | 'providerTimeoutMs'
>;

/**
 * The LLM nodes of the providers whose key is set: `openai-chat` (OpenAI or a compatible server)
 * and `anthropic-messages`. A provider without a key adds nothing (its node is not in the catalog).
 */
export function llmProviderNodes(settings: LlmProviderSettings, options: { progressIntervalMs?: number } = {}): NodeDefinition[] {
  const nodes: NodeDefinition[] = [];
  if (settings.openaiApiKey !== '' && settings.openaiModels.length > 0) {
    nodes.push(openAiChatNode({
      apiKey: settings.openaiApiKey,
      baseUrl: settings.openaiBaseUrl,
      models: settings.openaiModels,
      prices: modelPrices(settings.openaiPrices),
      timeoutMs: settings.providerTimeoutMs,
      progressIntervalMs: options.progressIntervalMs,
    }));
  }
  if (settings.anthropicApiKey !== '' && settings.anthropicModels.length > 0) {
    nodes.push(anthropicMessagesNode({
      apiKey: settings.anthropicApiKey,
      baseUrl: settings.anthropicBaseUrl,
      models: settings.anthropicModels,
      prices: modelPrices(settings.anthropicPrices),
      timeoutMs: settings.providerTimeoutMs,
      progressIntervalMs: options.progressIntervalMs,
    }));
  }
  return nodes;
}
