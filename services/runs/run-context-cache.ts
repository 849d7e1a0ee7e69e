import type { ArtifactInput, OutputCacheMode, Workflow } from '../contract';
import { outputSources, prepareWorkflow, type PreparedWorkflow, type SpecLookup } from '../engine';
import type { NodeDefinition } from '../nodes';
import { AppError } from '../platform/app-error';
import type { RunContextStore } from './ports';

/** A run as its steps see it: immutable once the run exists, so it is cached per process. */
export interface RunContext {
  runId: string;
  orgId: string;
  prepared: PreparedWorkflow;
  inputs: Record<string, ArtifactInput>;
  /** The steps whose outputs the run's outputs read. */
  outputSources: string[];
  /** How its steps use the output cache (the run's `Output-Cache` option; docs/runs.md, Output caching). */
  outputCache: OutputCacheMode;
  /**
   * The catalog file nodes it uses, as they were when it was created (docs/providers.md, Reloading
   * the catalog): its steps run these, not what a reload made of them since. Empty for most runs.
   */
  pinned: ReadonlyMap<string, NodeDefinition>;
  /** The batch whose row it runs (its steps wait in the batch lane: docs/scheduling.md); absent: a run of its own. */
  batchId?: string;
}

/** The definition a step of the run executes for `uses`: its pinned one, else the process's. */
export function nodeOfRun(context: RunContext, uses: string, find: (id: string) => NodeDefinition | undefined): NodeDefinition | undefined {
  return context.pinned.get(uses) ?? find(uses);
}

const NOTHING_PINNED: ReadonlyMap<string, NodeDefinition> = new Map();

/** A run's context from its prepared workflow and checked inputs. */
export function createRunContext(
  runId: string,
  orgId: string,
  prepared: PreparedWorkflow,
  inputs: Record<string, ArtifactInput>,
  outputCache: OutputCacheMode,
  pinned: ReadonlyMap<string, NodeDefinition> = NOTHING_PINNED,
  batchId?: string | null,
): RunContext {
  const context: RunContext = { runId, orgId, prepared, inputs, outputSources: outputSources(prepared.workflow), outputCache, pinned };
  if (batchId) context.batchId = batchId;
  return context;
}

/** A stored run that cannot be prepared again (code `run_unpreparable`): the catalog changed under it, or the row is corrupt. */
function unpreparableRun(runId: string, message: string): AppError {
  return new AppError({ code: 'run_unpreparable', message, details: { runId } });
}

/**
 * Loads a run's definition and inputs from Postgres and prepares them (validate, plan, interface)
 * once per process; the steps of a run reuse it. Least recently used runs are dropped beyond
 * `max`. Validation of a 10,000-node graph costs ~30 ms, so the cache matters for big runs.
 */
export class RunContextCache {
  private readonly cache = new Map<string, Promise<RunContext | null>>();

  constructor(
    private readonly runs: RunContextStore,
    private readonly specs: SpecLookup,
    /** The definitions of a stored run's pinned catalog entries (`NodeRegistry.restore`). */
    private readonly restore: (entries: Record<string, unknown>) => ReadonlyMap<string, NodeDefinition> = () => NOTHING_PINNED,
    private readonly max = 500,
  ) {}

  /** The run's context, or null when there is no such run. */
  get(runId: string): Promise<RunContext | null> {
    const hit = this.cache.get(runId);
    if (hit) {
      // Re-insert: Map iteration order is insertion order, so the oldest entry is the LRU one.
      this.cache.delete(runId);
      this.cache.set(runId, hit);
      return hit;
    }
    const loading = this.load(runId);
    this.cache.set(runId, loading);
    loading.then(
      (context) => context === null && this.cache.delete(runId),
      () => this.cache.delete(runId),
    );
    while (this.cache.size > this.max) this.cache.delete(this.cache.keys().next().value!);
    return loading;
  }

  /** The run's context if this process holds it already; never loads. */
  peek(runId: string): Promise<RunContext | null> | undefined {
    return this.cache.get(runId);
  }

  /** Seeds the cache with a context built by the API when it created the run. */
  put(context: RunContext): void {
    this.cache.set(context.runId, Promise.resolve(context));
    while (this.cache.size > this.max) this.cache.delete(this.cache.keys().next().value!);
  }

  /** Stored definitions are the graphs as run: mounted workflows already spliced in. */
  private async load(runId: string): Promise<RunContext | null> {
    const row = await this.runs.getRunContext(runId);
    if (!row) return null;
    const pinned = row.nodeEntries ? this.restore(row.nodeEntries) : NOTHING_PINNED;
    // The run validates against the specs it started with: its pinned nodes' first.
    const specs: SpecLookup = pinned.size === 0 ? this.specs : { get: (id) => pinned.get(id)?.spec ?? this.specs.get(id) };
    const prepared = prepareWorkflow(row.definition as Workflow, specs, (row.inputs ?? {}) as Record<string, ArtifactInput>, { spliced: true });
    if (!prepared.ok) throw unpreparableRun(runId, `the stored workflow no longer validates: ${prepared.message}`);
    return createRunContext(runId, row.orgId, prepared.prepared, prepared.inputs, row.outputCache, pinned, row.batchId);
  }
}
