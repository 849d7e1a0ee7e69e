import {
  LOCAL_MODEL_NODE_IDS,
  LOCAL_MODEL_NODES,
  LOCAL_TOOL_PACKAGES,
  llmProviderNodes,
  localModelNodes,
  localToolNodes,
  mediaProviderNodes,
  ModelPool,
  systemLocalTools,
  type LlmProviderSettings,
  type MediaProviderSettings,
  type NodeDefinition,
  type UnavailableNode,
} from './index';
import type { ConfiguredNodeSet } from './registry';
import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';

/** The settings of the nodes a deployment may add. */
export type ConfiguredNodeSettings = LlmProviderSettings & MediaProviderSettings & Pick<Config, 'localModelCpuSecondMicros' | 'localModelThreads'>;

/** The process's model threads, shared by every service it runs (tests start several). */
let modelPool: ModelPool | undefined;

/** The nodes this deployment offers beyond the platform's, and those it knows of but does not offer. */
export interface ConfiguredNodes extends ConfiguredNodeSet {
  nodes: NodeDefinition[];
  unavailable: UnavailableNode[];
}

/** The hosted provider nodes and the key that enables each group. */
const PROVIDER_KEYS: readonly { ids: readonly string[]; env: string; isSet(config: ConfiguredNodeSettings): boolean }[] = [
  { ids: ['openai-chat', 'openai-image', 'openai-embed', 'openai-speech', 'openai-transcribe'], env: 'OPENAI_API_KEY', isSet: (config) => !!config.openaiApiKey },
  { ids: ['anthropic-messages'], env: 'ANTHROPIC_API_KEY', isSet: (config) => !!config.anthropicApiKey },
  { ids: ['fal-image'], env: 'FAL_KEY', isSet: (config) => !!config.falKey },
  { ids: ['replicate-image'], env: 'REPLICATE_API_TOKEN', isSet: (config) => !!config.replicateApiToken },
];

/** What installs a local tool node's program. */
function installAdvice(packages: readonly string[]): string {
  const names = packages.join(' ');
  return `install ${names} (make system-deps, or apt-get install ${names})`;
}

/**
 * The nodes this deployment adds to the platform's: hosted providers whose key is configured and
 * local tools and models that are installed. A provider without a key, or a tool or model that is
 * missing, is left out of the catalog (and logged once at start-up), never listed and then failing;
 * it is listed as unavailable with what enables it, so a workflow naming it is told that instead of
 * "no such node".
 */
export async function configuredNodes(config: ConfiguredNodeSettings, log: Logger): Promise<ConfiguredNodes> {
  const nodes = [...llmProviderNodes(config), ...mediaProviderNodes(config), ...(await localToolNodes())];
  const offered = new Set(nodes.map((node) => node.spec.id));
  const unavailable: UnavailableNode[] = [];
  for (const provider of PROVIDER_KEYS) {
    if (!provider.isSet(config)) unavailable.push(...provider.ids.map((id) => ({ id, reason: `set ${provider.env}` })));
  }
  for (const [id, packages] of Object.entries(LOCAL_TOOL_PACKAGES)) {
    if (!offered.has(id)) unavailable.push({ id, reason: installAdvice(packages) });
  }
  modelPool ??= new ModelPool(config.localModelThreads);
  const models = localModelNodes({ cpuSecondMicros: config.localModelCpuSecondMicros, pool: modelPool }, await systemLocalTools());
  const modelIds = new Set(models.map((node) => node.spec.id));
  for (const id of LOCAL_MODEL_NODE_IDS.filter((id) => !modelIds.has(id))) unavailable.push({ id, reason: LOCAL_MODEL_NODES[id].install });
  // One line per remedy: "openai-chat, openai-image, ... left out of the catalog: set OPENAI_API_KEY".
  const byReason = new Map<string, string[]>();
  for (const node of unavailable) byReason.set(node.reason, [...(byReason.get(node.reason) ?? []), node.id]);
  for (const [reason, ids] of byReason) log.info(`${ids.join(', ')} left out of the catalog: ${reason}`);
  return { nodes: [...nodes, ...models], unavailable };
}

/** A node built from a catalog file entry a run stored, with this process's provider settings; undefined when it cannot be offered here. */
export function nodeOfEntry(_entry: unknown, _config: ConfiguredNodeSettings): NodeDefinition | undefined {
  return undefined;
}
