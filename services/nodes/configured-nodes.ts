import { LOCAL_TOOL_NODE_IDS, llmProviderNodes, localToolNodes, mediaProviderNodes, type LlmProviderSettings, type MediaProviderSettings, type NodeDefinition } from './index';
import type { ConfiguredNodeSet } from './registry';
import type { Logger } from '../platform/logger';

/** The settings of the nodes a deployment may add. */
export type ConfiguredNodeSettings = LlmProviderSettings & MediaProviderSettings;

/**
 * The nodes this deployment adds to the platform's: hosted providers whose key is configured and
 * local tools that are installed. A provider without a key, or a tool that is missing, is left
 * out of the catalog (and logged once at start-up), never listed and then failing.
 */
export async function configuredNodes(config: ConfiguredNodeSettings, log: Logger): Promise<ConfiguredNodeSet> {
  const llm = llmProviderNodes(config);
  if (!config.openaiApiKey) log.info('OPENAI_API_KEY is not set: openai-chat is left out of the catalog');
  if (!config.anthropicApiKey) log.info('ANTHROPIC_API_KEY is not set: anthropic-messages is left out of the catalog');
  const media = mediaProviderNodes(config);
  if (!config.openaiApiKey) log.info('OPENAI_API_KEY is not set: openai-image, openai-embed, openai-speech and openai-transcribe are left out of the catalog');
  if (!config.falKey) log.info('FAL_KEY is not set: fal-image is left out of the catalog');
  if (!config.replicateApiToken) log.info('REPLICATE_API_TOKEN is not set: replicate-image is left out of the catalog');
  const tools = await localToolNodes();
  const toolIds = new Set(tools.map((node) => node.spec.id));
  const missingTools = LOCAL_TOOL_NODE_IDS.filter((id) => !toolIds.has(id));
  if (missingTools.length > 0) {
    log.info(`local tools missing (install espeak-ng ffmpeg tesseract-ocr tesseract-ocr-eng): ${missingTools.join(', ')} left out of the catalog`);
  }
  return { nodes: [...llm, ...media, ...tools] };
}

/** A node built from a catalog file entry a run stored, with this process's provider settings; undefined when it cannot be offered here. */
export function nodeOfEntry(_entry: unknown, _config: ConfiguredNodeSettings): NodeDefinition | undefined {
  return undefined;
}
