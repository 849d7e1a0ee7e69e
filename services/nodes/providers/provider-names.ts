import type { CatalogEntry } from '../catalog-file/catalog-entry';

/**
 * Every hosted provider a node of this server can call, whether or not its key is set: the names
 * its calls carry (`providerFetch`'s `provider`, the `provider` label of the metrics) and the
 * provider part of a limit's key (`PROVIDER_LIMITS`, a catalog file's `limits:`). OpenRouter is
 * reached by OpenAI-compatible catalog entries whose `baseUrl` is OpenRouter's.
 */
export const PROVIDER_NAMES = ['openai', 'anthropic', 'openrouter', 'fal', 'replicate'] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

/**
 * The provider each catalog entry adapter (`provider:` of an entry) calls at its configured base
 * URL. Exhaustive, so a new adapter must name its provider here.
 */
export const PROVIDER_OF_ADAPTER: Readonly<Record<CatalogEntry['provider'], ProviderName>> = {
  fal: 'fal',
  replicate: 'replicate',
  anthropic: 'anthropic',
  'openai-chat': 'openai',
  'openai-images': 'openai',
  'openai-speech': 'openai',
  'openai-transcribe': 'openai',
  'openai-embeddings': 'openai',
};
