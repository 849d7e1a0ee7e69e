import {
  LOCAL_MODEL_NODE_IDS,
  LOCAL_MODEL_NODES,
  LOCAL_TOOL_NODE_IDS,
  llmProviderNodes,
  localModelNodes,
  localToolNodes,
  mediaProviderNodes,
  ModelPool,
  systemLocalTools,
  type LlmProviderSettings,
  type MediaProviderSettings,
  type NodeDefinition,
} from './index';
import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';

/** The settings of the nodes a deployment may add. */
export type ConfiguredNodeSettings = LlmProviderSettings & MediaProviderSettings & Pick<Config, 'localModelCpuSecondMicros' | 'localModelThreads'>;

/** The process's model threads, shared by every service it runs (tests start several). */
let modelPool: ModelPool | undefined;

/**
 * The nodes this deployment adds to the platform's: hosted providers whose key is configured and
 * local tools and models that are installed. A provider without a key, or a tool or model that
 * is missing, is left out of the catalog (and logged once at start-up), never listed and then failing.
 */
export async function configuredNodes(config: ConfiguredNodeSettings, log: Logger): Promise<NodeDefinition[]> {
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
  modelPool ??= new ModelPool(config.localModelThreads);
  const models = localModelNodes({ cpuSecondMicros: config.localModelCpuSecondMicros, pool: modelPool }, await systemLocalTools());
  const modelIds = new Set(models.map((node) => node.spec.id));
  for (const id of LOCAL_MODEL_NODE_IDS.filter((id) => !modelIds.has(id))) {
    log.info(`local model ${id} is not installed (${LOCAL_MODEL_NODES[id].install}): left out of the catalog`);
  }
  return [...llm, ...media, ...tools, ...models];
}
