import { MEDIA_PROVIDERS, type CatalogEntry, type MediaProvider } from './catalog-entry';

/** The input ports of every chat entry (see llm-node.ts), `image` with vision. */
export const CHAT_INPUTS = ['prompt', 'system', 'model', 'temperature', 'maxTokens', 'schema'] as const;

/**
 * What an answer measures, by adapter, beyond the count of each output port's values (a port
 * named `images` is the number of images): `megapixels` of the image outputs in all, and what
 * Replicate reports in `metrics` (`seconds` of prediction time; `input_tokens`, `output_tokens`
 * of language models), and OpenAI's `usage` (tokens) and transcription `duration` (`seconds`). A measure the answer lacks makes the call cost its estimate.
 */
export const MEASURED: Record<MediaProvider, readonly string[]> = {
  fal: ['megapixels'],
  replicate: ['megapixels', 'seconds', 'input_tokens', 'output_tokens'],
  'openai-images': ['megapixels', 'input_tokens', 'output_tokens'],
  'openai-speech': [],
  'openai-transcribe': ['seconds'],
  'openai-embeddings': ['input_tokens'],
};

/** Token counts of a chat call: the worst case in the estimate (the prompt's conservative count, and maxTokens), as reported after. */
export const CHAT_MEASURED = ['input_tokens', 'output_tokens'] as const;

const isMediaProvider = (provider: string): provider is MediaProvider => (MEDIA_PROVIDERS as readonly string[]).includes(provider);

/** Names `price.estimate` may read: the entry's inputs (chat: also the worst-case token counts). */
export function estimateVariables(entry: CatalogEntry): Set<string> {
  if (isMediaProvider(entry.provider)) return new Set(Object.keys((entry as { inputs: object }).inputs));
  return new Set([...CHAT_INPUTS, ...('vision' in entry && entry.vision ? ['image'] : []), ...CHAT_MEASURED]);
}

/** Names `price.actual` may read: the inputs and what the adapter measures in the answer. */
export function actualVariables(entry: CatalogEntry): Set<string> {
  const names = estimateVariables(entry);
  if (isMediaProvider(entry.provider)) {
    for (const name of Object.keys((entry as { outputs: object }).outputs)) names.add(name);
    for (const name of MEASURED[entry.provider]) names.add(name);
  }
  return names;
}
