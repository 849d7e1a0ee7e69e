import stringify from 'safe-stable-stringify';
import { createCatalog, type NodeCatalog, type UnavailableNode } from './catalog';
import { IMAGE_NODES } from './image-nodes';
import { JSON_NODES } from './json-nodes';
import { MATH_NODES } from './math-nodes';
import type { NodeDefinition } from './node-definition';
import { TEXT_NODES } from './text-nodes';

/** Every platform node, in palette order: text, JSON, math, image. */
export const PLATFORM_NODES: readonly NodeDefinition[] = [...TEXT_NODES, ...JSON_NODES, ...MATH_NODES, ...IMAGE_NODES];

const byId = new Map<string, NodeDefinition>();
for (const node of PLATFORM_NODES) {
  // Checked at load: a duplicated id would make one node unreachable.
  if (byId.has(node.spec.id)) throw new Error(`duplicate platform node id "${node.spec.id}"`);
  byId.set(node.spec.id, node);
}

/** The palette served by `nodes.list` and `nodes.get`, and the spec lookup for workflow validation. */
export function createNodeCatalog(): NodeCatalog {
  return createCatalog(PLATFORM_NODES.map((node) => node.spec));
}

/** The definition of a platform node (to estimate, price and execute it), or undefined for an unknown id. */
export function findNode(id: string): NodeDefinition | undefined {
  return byId.get(id);
}

const LOCAL_NODE_IDS: ReadonlySet<string> = new Set(PLATFORM_NODES.map((node) => node.spec.id));

/**
 * Whether a node runs in-process with bounded work (every local platform node: text, JSON, math,
 * image operations), so a step of it may run inline right after its predecessor. Provider nodes
 * (remote calls that may take minutes) are not local.
 */
export function isLocalNode(id: string): boolean {
  return LOCAL_NODE_IDS.has(id);
}

/**
 * What a deployment adds to the platform's nodes (providers with a configured key, installed local
 * tools, catalog file entries), built anew when the catalog is reloaded.
 */
export interface ConfiguredNodeSet {
  nodes: readonly NodeDefinition[];
  /**
   * The catalog file entries behind some of `nodes`, by node id: plain JSON, stored with each run
   * that uses one, so the run executes the definition it started with whatever is reloaded later.
   */
  entries?: ReadonlyMap<string, unknown>;
  /** Nodes this server knows of but does not offer, with what installs or enables them. */
  unavailable?: readonly UnavailableNode[];
}

/** The catalog file nodes a run uses, as they were when the run was created. */
export interface PinnedNodes {
  /** By node id: what the run's steps of that node execute. */
  definitions: ReadonlyMap<string, NodeDefinition>;
  /** By node id: the entries they were built from, stored with the run; null when it uses none. */
  entries: Record<string, unknown> | null;
}

/** Builds a node from a stored catalog entry; undefined when this process cannot (its provider has no key here). */
export type NodeFromEntry = (entry: unknown) => NodeDefinition | undefined;

/** The nodes one process can run: the platform's, plus those its configuration adds. */
export interface NodeRegistry {
  /** The palette (`nodes.list`, `nodes.get`) and the spec lookup for validation; follows reloads. */
  catalog: NodeCatalog;
  find(id: string): NodeDefinition | undefined;
  /** What installs or enables a node that exists but is not offered here (see `NodeCatalog.unavailable`). */
  unavailable(id: string): string | undefined;
  /** Whether a step of the node may run inline after its predecessor (see `isLocalNode`). */
  mayRunInline(id: string): boolean;
  /** The catalog file nodes among `uses`, as they are now: what a run created now keeps. */
  pin(uses: Iterable<string>): PinnedNodes;
  /**
   * The definitions of a stored run's entries (from `pin`): this process's own when the entry
   * is unchanged, else built from the entry (once per distinct entry). An entry this process
   * cannot build is left out: the step then fails as for a node it does not have.
   */
  restore(entries: Record<string, unknown>): ReadonlyMap<string, NodeDefinition>;
  /** Swaps the configured nodes for a new set (a reload of the catalog); runs already created keep theirs (`pin`). */
  replace(set: ConfiguredNodeSet): void;
}

/** A run's pins when it uses no catalog file node. */
const NO_PINS: PinnedNodes = { definitions: new Map(), entries: null };

/** Most distinct stored entries a process keeps built (runs of older catalog versions). */
const MAX_RESTORED = 500;

/**
 * A registry of the platform nodes and a configured set (providers with a configured key, local
 * tools that are installed, catalog file entries). Configured nodes never run inline unless they
 * say so: they call out to other processes or hosts and may take minutes, so each gets its own job.
 */
export function createNodeRegistry(initial: ConfiguredNodeSet = { nodes: [] }, options: { fromEntry?: NodeFromEntry } = {}): NodeRegistry {
  let state = registryState(initial);
  const restored = new Map<string, NodeDefinition | undefined>();
  const catalog: NodeCatalog = { list: () => state.catalog.list(), get: (id) => state.catalog.get(id), unavailable: (id) => state.catalog.unavailable(id) };
  return {
    catalog,
    find: (id) => state.definitions.get(id),
    unavailable: (id) => state.catalog.unavailable(id),
    mayRunInline: (id) => isLocalNode(id) || state.definitions.get(id)?.inline === true,
    pin(uses) {
      const { entries, definitions } = state;
      const pinned = new Map<string, NodeDefinition>();
      const stored: Record<string, unknown> = {};
      for (const id of uses) {
        const entry = entries.get(id);
        const definition = definitions.get(id);
        if (entry === undefined || definition === undefined || pinned.has(id)) continue;
        pinned.set(id, definition);
        stored[id] = entry;
      }
      return pinned.size === 0 ? NO_PINS : { definitions: pinned, entries: stored };
    },
    restore(stored) {
      const result = new Map<string, NodeDefinition>();
      for (const [id, entry] of Object.entries(stored)) {
        const key = stringify(entry) ?? '';
        if (!restored.has(key)) {
          // This process's own definition when its entry is the same: the common case, built once.
          const own = state.entries.get(id) !== undefined && stringify(state.entries.get(id)) === key ? state.definitions.get(id) : undefined;
          restored.set(key, own ?? options.fromEntry?.(entry));
          while (restored.size > MAX_RESTORED) restored.delete(restored.keys().next().value!);
        }
        const definition = restored.get(key);
        if (definition && definition.spec.id === id) result.set(id, definition);
      }
      return result;
    },
    replace(set) {
      state = registryState(set);
    },
  };
}

interface RegistryState {
  catalog: NodeCatalog;
  definitions: ReadonlyMap<string, NodeDefinition>;
  entries: ReadonlyMap<string, unknown>;
}

function registryState(set: ConfiguredNodeSet): RegistryState {
  const all = [...PLATFORM_NODES, ...set.nodes];
  const definitions = new Map<string, NodeDefinition>();
  for (const node of all) {
    if (definitions.has(node.spec.id)) throw new Error(`duplicate node id "${node.spec.id}"`);
    definitions.set(node.spec.id, node);
  }
  return { catalog: createCatalog(all.map((node) => node.spec), set.unavailable ?? []), definitions, entries: set.entries ?? new Map() };
}
