import { catalogNode, CatalogFileError, readCatalogDocument, type CatalogEntry, type ProviderConnections } from './catalog-file';
import {
  LOCAL_MODEL_NODE_IDS,
  LOCAL_MODEL_NODES,
  LOCAL_TOOL_NODE_IDS,
  LOCAL_TOOL_PACKAGES,
  llmProviderNodes,
  localModelNodes,
  localToolNodes,
  mediaProviderNodes,
  ModelPool,
  PLATFORM_NODES,
  systemLocalTools,
  type LlmProviderSettings,
  type MediaProviderSettings,
  type NodeDefinition,
  type UnavailableNode,
} from './index';
import { PROVIDER_NAMES } from './providers/provider-names';
import type { ConfiguredNodeSet } from './registry';
import type { Logger } from '../platform/logger';
import { catalogKeyEnvironment, type Config } from '../platform/config';
import { mergeProviderLimits, type FileProviderLimits, type ProviderLimitSetting } from '../platform/provider-limit-settings';

/** The settings of the nodes a deployment may add. */
export type ConfiguredNodeSettings = LlmProviderSettings &
  MediaProviderSettings &
  ProviderConnections &
  Pick<Config, 'nodeCatalogFiles' | 'localModelCpuSecondMicros' | 'localModelThreads' | 'providerLimits'>;

/** The process's model threads, shared by every service it runs (tests start several). */
let modelPool: ModelPool | undefined;

/** The nodes this deployment adds, those it leaves out and why, and the catalog entries behind its catalog nodes. */
export interface ConfiguredNodes extends ConfiguredNodeSet {
  nodes: NodeDefinition[];
  /** Nodes not offered, with what enables them: a provider key missing, a local tool or model not installed. */
  unavailable: UnavailableNode[];
  /** The loaded catalog entries by node id (offered or not). */
  entries: Map<string, CatalogEntry>;
  /**
   * The providers' limits in force: the catalog files' `limits:` merged with `PROVIDER_LIMITS`,
   * which replaces a file's entry for the same key (mergeProviderLimits). Re-read with the files.
   */
  limits: ProviderLimitSetting[];
}

/** The provider nodes written in code and the key each needs; a catalog entry may not take one of their ids. */
const CODE_PROVIDER_KEYS: Readonly<Record<string, { env: string; isSet(config: ConfiguredNodeSettings): boolean }>> = {
  'openai-chat': { env: 'OPENAI_API_KEY', isSet: (config) => !!config.openaiApiKey },
  'openai-image': { env: 'OPENAI_API_KEY', isSet: (config) => !!config.openaiApiKey },
  'openai-embed': { env: 'OPENAI_API_KEY', isSet: (config) => !!config.openaiApiKey },
  'openai-speech': { env: 'OPENAI_API_KEY', isSet: (config) => !!config.openaiApiKey },
  'openai-transcribe': { env: 'OPENAI_API_KEY', isSet: (config) => !!config.openaiApiKey },
  'anthropic-messages': { env: 'ANTHROPIC_API_KEY', isSet: (config) => !!config.anthropicApiKey },
  'fal-image': { env: 'FAL_KEY', isSet: (config) => !!config.falKey },
  'replicate-image': { env: 'REPLICATE_API_TOKEN', isSet: (config) => !!config.replicateApiToken },
};

/** What installs a local tool node's program. */
function installAdvice(packages: readonly string[]): string {
  const names = packages.join(' ');
  return `install ${names} (make system-deps, or apt-get install ${names})`;
}

/**
 * The entries of the catalog files, in order: each file read and checked (readCatalogFile), and
 * no id given twice across files or taken from a node written in code. Throws `CatalogFileError`
 * naming the file, the entry and the field: the process does not start with a bad catalog.
 */
export function catalogEntriesOf(files: readonly string[]): Map<string, CatalogEntry> {
  return catalogOf(files).entries;
}

/** The catalog files' entries (as catalogEntriesOf) and each file's `limits:`, unmerged. */
export function catalogOf(files: readonly string[]): { entries: Map<string, CatalogEntry>; limits: FileProviderLimits[] } {
  const taken = new Set([...PLATFORM_NODES.map((node) => node.spec.id), ...Object.keys(CODE_PROVIDER_KEYS), ...LOCAL_TOOL_NODE_IDS, ...LOCAL_MODEL_NODE_IDS]);
  const entries = new Map<string, CatalogEntry>();
  const limits: FileProviderLimits[] = [];
  for (const file of files) {
    const document = readCatalogDocument(file);
    document.entries.forEach((entry, index) => {
      const clash = taken.has(entry.id) ? 'a node written in code' : entries.has(entry.id) ? 'an entry of an earlier catalog file' : undefined;
      if (clash) throw new CatalogFileError(`${file}: entry ${index + 1} (${JSON.stringify(entry.id)}): id: "${entry.id}" is the id of ${clash}; choose another`);
      entries.set(entry.id, entry);
    });
    limits.push({ file, limits: document.limits });
  }
  return { entries, limits };
}

/**
 * The providers' limits in force for these catalog files and `PROVIDER_LIMITS`; throws
 * `CatalogFileError` for a bad file and `ProviderLimitsError` for an unknown provider or two
 * files that disagree, so a process checks them before it starts.
 */
export function providerLimitsOf(files: readonly string[], fromEnv: readonly ProviderLimitSetting[]): ProviderLimitSetting[] {
  return mergeProviderLimits(catalogOf(files).limits, fromEnv, PROVIDER_NAMES);
}

/**
 * The nodes this deployment adds to the platform's: hosted providers whose key is configured
 * (written in code, and catalog file entries), and local tools and models that are installed. A
 * provider without a key, or a tool or model that is missing, is left out of the catalog (and
 * logged once at start-up), never listed and then failing; it is listed as unavailable with what
 * enables it, so a workflow naming it is told that instead of "no such node".
 */
export async function configuredNodes(config: ConfiguredNodeSettings, log: Logger, env: Readonly<Record<string, string | undefined>> = catalogKeyEnvironment()): Promise<ConfiguredNodes> {
  const providers = [...llmProviderNodes(config), ...mediaProviderNodes(config)];
  const offered = new Set(providers.map((node) => node.spec.id));
  const unavailable: UnavailableNode[] = [];
  for (const [id, key] of Object.entries(CODE_PROVIDER_KEYS)) {
    if (offered.has(id)) continue;
    unavailable.push({ id, reason: key.isSet(config) ? `configure its models and prices (docs/providers.md)` : `set ${key.env}` });
  }

  const catalog = catalogOf(config.nodeCatalogFiles);
  const { entries } = catalog;
  const limits = mergeProviderLimits(catalog.limits, config.providerLimits, PROVIDER_NAMES);
  const fromCatalog: NodeDefinition[] = [];
  for (const entry of entries.values()) {
    const node = catalogNode(entry, { ...config, env });
    if ('missing' in node) unavailable.push({ id: entry.id, reason: node.missing });
    else fromCatalog.push(node);
  }

  const tools = await localToolNodes();
  const toolIds = new Set(tools.map((node) => node.spec.id));
  for (const [id, packages] of Object.entries(LOCAL_TOOL_PACKAGES)) {
    if (!toolIds.has(id)) unavailable.push({ id, reason: installAdvice(packages) });
  }
  modelPool ??= new ModelPool(config.localModelThreads);
  const models = localModelNodes({ cpuSecondMicros: config.localModelCpuSecondMicros, pool: modelPool }, await systemLocalTools());
  const modelIds = new Set(models.map((node) => node.spec.id));
  for (const id of LOCAL_MODEL_NODE_IDS.filter((id) => !modelIds.has(id))) unavailable.push({ id, reason: LOCAL_MODEL_NODES[id].install });

  // One line per remedy: "openai-chat, openai-image, ... left out of the catalog: set OPENAI_API_KEY".
  const byReason = new Map<string, string[]>();
  for (const node of unavailable) byReason.set(node.reason, [...(byReason.get(node.reason) ?? []), node.id]);
  for (const [reason, ids] of byReason) log.info(`${ids.join(', ')} left out of the catalog: ${reason}`);
  return { nodes: [...providers, ...fromCatalog, ...tools, ...models], unavailable, entries, limits };
}

/**
 * A node built from a catalog file entry a run stored, with this process's provider keys and
 * settings; undefined when this process cannot offer it (its provider's key is not set here).
 */
export function nodeOfEntry(entry: unknown, config: ConfiguredNodeSettings, env: Readonly<Record<string, string | undefined>> = catalogKeyEnvironment()): NodeDefinition | undefined {
  const node = catalogNode(entry as CatalogEntry, { ...config, env });
  return 'missing' in node ? undefined : node;
}
