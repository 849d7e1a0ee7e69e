import { catalogNode, CatalogFileError, readCatalogFile, type CatalogEntry, type ProviderConnections } from './catalog-file';
import { LOCAL_TOOL_NODE_IDS, llmProviderNodes, localToolNodes, mediaProviderNodes, PLATFORM_NODES, type LlmProviderSettings, type MediaProviderSettings, type NodeDefinition } from './index';
import type { Logger } from '../platform/logger';
import { catalogKeyEnvironment, type Config } from '../platform/config';

/** The settings of the nodes a deployment may add. */
export type ConfiguredNodeSettings = LlmProviderSettings & MediaProviderSettings & ProviderConnections & Pick<Config, 'nodeCatalogFiles'>;

/** The nodes this deployment adds, those it leaves out and why, and the catalog entries behind its catalog nodes. */
export interface ConfiguredNodes {
  nodes: NodeDefinition[];
  /** Nodes not offered: a catalog entry or a code node whose provider key is missing, a local tool not installed. */
  unavailable: { id: string; reason: string }[];
  /** The loaded catalog entries by node id (offered or not). */
  entries: Map<string, CatalogEntry>;
}

/** Ids of the provider nodes written in code; a catalog entry may not take one. */
const CODE_PROVIDER_NODE_IDS = ['openai-chat', 'anthropic-messages', 'openai-image', 'openai-embed', 'openai-speech', 'openai-transcribe', 'fal-image', 'replicate-image'];

/**
 * The entries of the catalog files, in order: each file read and checked (readCatalogFile), and
 * no id given twice across files or taken from a node written in code. Throws `CatalogFileError`
 * naming the file, the entry and the field: the process does not start with a bad catalog.
 */
export function catalogEntriesOf(files: readonly string[]): Map<string, CatalogEntry> {
  const taken = new Set([...PLATFORM_NODES.map((node) => node.spec.id), ...CODE_PROVIDER_NODE_IDS, ...LOCAL_TOOL_NODE_IDS]);
  const entries = new Map<string, CatalogEntry>();
  for (const file of files) {
    readCatalogFile(file).forEach((entry, index) => {
      const clash = taken.has(entry.id) ? 'a node written in code' : entries.has(entry.id) ? 'an entry of an earlier catalog file' : undefined;
      if (clash) throw new CatalogFileError(`${file}: entry ${index + 1} (${JSON.stringify(entry.id)}): id: "${entry.id}" is the id of ${clash}; choose another`);
      entries.set(entry.id, entry);
    });
  }
  return entries;
}

/**
 * The nodes this deployment adds to the platform's: hosted providers whose key is configured
 * (written in code, and catalog file entries), and local tools that are installed. A provider
 * without a key, or a tool that is missing, is left out of the catalog (and logged once at
 * start-up), never listed and then failing.
 */
export async function configuredNodes(config: ConfiguredNodeSettings, log: Logger, env: Readonly<Record<string, string | undefined>> = catalogKeyEnvironment()): Promise<ConfiguredNodes> {
  const unavailable: { id: string; reason: string }[] = [];
  const llm = llmProviderNodes(config);
  const media = mediaProviderNodes(config);
  const offered = new Set([...llm, ...media].map((node) => node.spec.id));
  const keyOf: Record<string, string> = {
    'openai-chat': 'OPENAI_API_KEY', 'anthropic-messages': 'ANTHROPIC_API_KEY', 'openai-image': 'OPENAI_API_KEY', 'openai-embed': 'OPENAI_API_KEY',
    'openai-speech': 'OPENAI_API_KEY', 'openai-transcribe': 'OPENAI_API_KEY', 'fal-image': 'FAL_KEY', 'replicate-image': 'REPLICATE_API_TOKEN',
  };
  const keySet: Record<string, boolean> = { OPENAI_API_KEY: !!config.openaiApiKey, ANTHROPIC_API_KEY: !!config.anthropicApiKey, FAL_KEY: !!config.falKey, REPLICATE_API_TOKEN: !!config.replicateApiToken };
  for (const id of CODE_PROVIDER_NODE_IDS) {
    if (offered.has(id)) continue;
    const key = keyOf[id]!;
    unavailable.push({ id, reason: keySet[key] ? 'its models or prices are not configured' : `${key} is not set` });
  }

  const entries = catalogEntriesOf(config.nodeCatalogFiles);
  const fromCatalog: NodeDefinition[] = [];
  for (const entry of entries.values()) {
    const node = catalogNode(entry, { ...config, env });
    if ('missing' in node) unavailable.push({ id: entry.id, reason: node.missing });
    else fromCatalog.push(node);
  }

  const tools = await localToolNodes();
  const toolIds = new Set(tools.map((node) => node.spec.id));
  for (const id of LOCAL_TOOL_NODE_IDS) if (!toolIds.has(id)) unavailable.push({ id, reason: 'its local tool is not installed (install espeak-ng ffmpeg tesseract-ocr tesseract-ocr-eng)' });

  // Once, grouped by reason: "FAL_KEY is not set: fal-image, fal-flux-schnell, … are left out of the catalog".
  const byReason = new Map<string, string[]>();
  for (const { id, reason } of unavailable) byReason.set(reason, [...(byReason.get(reason) ?? []), id]);
  for (const [reason, ids] of byReason) log.info(`${reason}: ${ids.join(', ')} left out of the catalog`);
  return { nodes: [...llm, ...media, ...fromCatalog, ...tools], unavailable, entries };
}
