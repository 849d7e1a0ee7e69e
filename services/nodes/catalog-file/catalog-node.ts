import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { Config } from '../../platform/config';
import type { NodeDefinition } from '../node-definition';
import { ANTHROPIC_SHAPE, anthropicCall } from '../providers/anthropic-messages';
import { llmNode } from '../providers/llm-node';
import { OPENAI_CHAT_SHAPE, openAiCall } from '../providers/openai-chat';
import type { ChatCatalogEntry, CatalogEntry } from './catalog-entry';
import { falJob, mediaEntryNode, replicateJob } from './media-entry-node';
import { openAiJob } from './openai-jobs';
import { formulaMicros, parsePriceFormula } from './price-formula';
import { isMedia } from './read-catalog-file';

/** What the adapters need to reach their providers: keys, base URLs, timeouts, and the environment for an entry's own key (`apiKeyEnv`). */
export type ProviderConnections = Pick<
  Config,
  'falKey' | 'falBaseUrl' | 'replicateApiToken' | 'replicateBaseUrl' | 'openaiApiKey' | 'openaiBaseUrl' | 'anthropicApiKey' | 'anthropicBaseUrl' | 'providerTimeoutMs' | 'providerPollMs'
> & { env?: Readonly<Record<string, string | undefined>> };

/** The SHA-256 of the entry's stable JSON: any change of the entry changes the node's output cache key. */
export function entryRevision(entry: CatalogEntry): string {
  return createHash('sha256').update(stringify(entry) ?? '').digest('hex');
}

/**
 * The node of a checked catalog entry (see readCatalogFile), or what is missing to offer it
 * (its provider's key). Built the same way wherever it runs, from the entry alone and the
 * connections.
 */
export function catalogNode(entry: CatalogEntry, connections: ProviderConnections): NodeDefinition | { missing: string } {
  const revision = entryRevision(entry);
  const timeoutMs = connections.providerTimeoutMs;
  const pollMs = connections.providerPollMs;
  if (isMedia(entry)) {
    if (entry.provider === 'fal') {
      if (!connections.falKey) return { missing: 'set FAL_KEY' };
      return mediaEntryNode(entry, falJob({ key: connections.falKey, baseUrl: connections.falBaseUrl, timeoutMs, pollMs }, entry.model), revision);
    }
    if (entry.provider !== 'replicate') {
      const key = openAiKey(entry, connections);
      if ('missing' in key) return key;
      return mediaEntryNode(entry, openAiJob(entry.provider, { apiKey: key.apiKey, baseUrl: (entry.baseUrl ?? connections.openaiBaseUrl).replace(/\/+$/, ''), timeoutMs }, entry.model, entry.id), revision);
    }
    if (!connections.replicateApiToken) return { missing: 'set REPLICATE_API_TOKEN' };
    return mediaEntryNode(entry, replicateJob({ token: connections.replicateApiToken, baseUrl: connections.replicateBaseUrl, timeoutMs, pollMs }, entry.model), revision);
  }
  return chatEntryNode(entry, connections, revision);
}

/** An entry's key: from its own variable (`apiKeyEnv`), or the provider's configured one. */
function openAiKey(entry: CatalogEntry, connections: ProviderConnections): { apiKey: string } | { missing: string } {
  const openai = entry.provider.startsWith('openai-');
  const own = 'apiKeyEnv' in entry ? entry.apiKeyEnv : undefined;
  const apiKey = own !== undefined ? (connections.env?.[own] ?? '') : openai ? connections.openaiApiKey : connections.anthropicApiKey;
  return apiKey ? { apiKey } : { missing: `set ${own ?? (openai ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY')}` };
}

function chatEntryNode(entry: ChatCatalogEntry, connections: ProviderConnections, revision: string): NodeDefinition | { missing: string } {
  const openai = entry.provider === 'openai-chat';
  const key = openAiKey(entry, connections);
  if ('missing' in key) return key;
  const { apiKey } = key;
  const baseUrl = openai ? (entry.baseUrl ?? connections.openaiBaseUrl) : connections.anthropicBaseUrl;
  const shape = openai ? OPENAI_CHAT_SHAPE : ANTHROPIC_SHAPE;
  const formulas = { estimate: parsePriceFormula(entry.price.estimate), actual: parsePriceFormula(entry.price.actual) };
  const settings = { apiKey, baseUrl, timeoutMs: connections.providerTimeoutMs };
  // OpenRouter's OpenAI-compatible API is OpenRouter's budget, not OpenAI's (its limits, metrics and messages).
  const provider = !openai ? 'anthropic' : URL.parse(baseUrl)?.hostname.endsWith('openrouter.ai') ? 'openrouter' : 'openai';
  return llmNode({
    id: entry.id,
    title: entry.title,
    description: entry.description,
    category: entry.category,
    ...(entry.example ? { example: entry.example } : {}),
    provider,
    models: [entry.model],
    cost: (inputs, usage, phase) => formulaMicros(formulas[phase], { ...inputs, input_tokens: usage.inputTokens, output_tokens: usage.outputTokens }, `price.${phase}`),
    maxTemperature: shape.maxTemperature,
    maxOutputTokens: Math.min(entry.maxOutputTokens ?? shape.maxOutputTokens, 1_000_000),
    overheadTokens: shape.overheadTokens,
    vision: entry.vision ?? false,
    ...(entry.maxPromptLength !== undefined ? { maxPromptLength: entry.maxPromptLength } : {}),
    revision,
    call: openai ? openAiCall(settings, provider) : anthropicCall(settings),
  });
}
