import type { Artifact } from '../../contract';
import type { ArtifactStore } from '../../nodes';
import { AppError, isAppError } from '../../platform/app-error';
import type { Logger } from '../../platform/logger';
import { bytesHash, outputCacheKey, refsIn } from './output-cache-key';
import type { OutputCacheStore } from '../ports';
import type { ReservedStep } from './step-start';

/** What the output cache tells metrics: hit, miss, store, eviction (n of them), error (a failed read or write). */
export type OutputCacheOutcome = 'hit' | 'miss' | 'store' | 'eviction' | 'error';

export interface OutputCacheOptions {
  store: OutputCacheStore;
  /** Whether a ref is one of the service's own signed blob URLs (others are never hashed nor cached). */
  isOwnRef(ref: string): boolean;
  /** Most entries per organization (`OUTPUT_CACHE_MAX_ENTRIES`). */
  maxEntries: number;
  /** Longest an entry lives (`OUTPUT_CACHE_TTL_SECONDS`); never beyond the artifacts it names. */
  ttlSeconds: number;
  /** Largest entry stored, bytes of its outputs as JSON (`OUTPUT_CACHE_MAX_ENTRY_BYTES`). */
  maxEntryBytes: number;
  log: Logger;
  observe(outcome: OutputCacheOutcome, node: string, n?: number): void;
  now?: () => Date;
}

/** A step's place in the cache: its key, and the outputs of an entry found under it. */
export type CacheLookup = { key: string; outputs: Record<string, unknown> | undefined };

/** A data input that is not the service's own file: its bytes are not ours to hash (it would be fetched), so the step is not cached. */
function foreignInput(): AppError {
  return new AppError({ code: 'foreign_input', message: 'an input is not a file of this service' });
}

/** Content hashes remembered per process, by ref: a signed URL names one immutable blob. */
const HASHES_KEPT = 1000;

/**
 * The output cache as steps use it (docs/runs.md, Output caching): whether a step may use it (its
 * run's mode and its node's policy), its key, the lookup and the store. Never fails a step: a
 * failed lookup is a miss, a failed store is logged and counted.
 */
export class OutputCache {
  private readonly hashes = new Map<string, Promise<string>>();

  constructor(private readonly options: OutputCacheOptions) {}

  /** Whether `step` may use the cache, by its run's `Output-Cache` mode and its node's policy. */
  applies(step: Pick<ReservedStep, 'context' | 'definition' | 'inputs'>): boolean {
    const policy = step.definition.cache;
    const mode = step.context.outputCache;
    if (!policy || mode === 'off') return false;
    if (policy.kind === 'deterministic') return true;
    return mode === 'llm' && policy.eligible(step.inputs);
  }

  /**
   * The step's key and the outputs stored under it, or undefined when the step does not use the
   * cache (its mode or node says no, an input is a foreign file, or its key cannot be computed).
   */
  async lookup(step: ReservedStep, artifacts: ArtifactStore): Promise<CacheLookup | undefined> {
    if (!this.applies(step)) return undefined;
    const node = step.definition.spec.id;
    let key: string;
    try {
      key = await outputCacheKey(step.definition, step.inputs, (artifact) => this.contentHash(artifact, artifacts));
    } catch (err) {
      // An unreadable input fails the node itself, which reads it next; the cache just stays out of it.
      if (!isAppError(err, 'foreign_input')) this.options.log.info({ err, runId: step.runId, nodeId: step.nodeId }, 'output cache: no key (an input could not be read)');
      return undefined;
    }
    try {
      const outputs = await this.options.store.get(step.context.orgId, key);
      this.options.observe(outputs ? 'hit' : 'miss', node);
      return { key, outputs: outputs ?? undefined };
    } catch (err) {
      this.options.log.warn({ err, runId: step.runId, nodeId: step.nodeId }, 'output cache: lookup failed; the step runs');
      this.options.observe('error', node);
      return { key, outputs: undefined };
    }
  }

  /**
   * Stores a step's outputs under `key` for the cache's TTL, and, when they name files, no longer
   * than those files' retention less one TTL: a hit hands out links that still have that long to
   * live, and no entry outlives the blobs it names (the retention sweeper deletes them at their
   * expiry). Outputs naming a file that is not the service's own (a provider's link), or too
   * large, are not stored. Never throws.
   */
  async store(step: ReservedStep, key: string, outputs: Record<string, unknown>): Promise<void> {
    const node = step.definition.spec.id;
    const { ttlSeconds, maxEntryBytes, maxEntries } = this.options;
    const now = (this.options.now?.() ?? new Date()).getTime();
    let expiresAt = now + ttlSeconds * 1000;
    for (const ref of refsIn(outputs)) {
      const expires = this.options.isOwnRef(ref) ? expiryOf(ref) : undefined;
      if (expires === undefined) return;
      expiresAt = Math.min(expiresAt, expires - ttlSeconds * 1000);
    }
    if (expiresAt <= now || Buffer.byteLength(JSON.stringify(outputs)) > maxEntryBytes) return;
    try {
      const { evicted } = await this.options.store.put({ orgId: step.context.orgId, key, node, outputs, runId: step.runId, expiresAt: new Date(expiresAt), maxEntries });
      this.options.observe('store', node);
      if (evicted > 0) this.options.observe('eviction', node, evicted);
    } catch (err) {
      this.options.log.warn({ err, runId: step.runId, nodeId: step.nodeId }, 'output cache: store failed');
      this.options.observe('error', node);
    }
  }

  private contentHash(artifact: Artifact, artifacts: ArtifactStore): Promise<string> {
    const ref = artifact.ref as string;
    if (!this.options.isOwnRef(ref)) return Promise.reject(foreignInput());
    let hash = this.hashes.get(ref);
    if (hash) {
      this.hashes.delete(ref);
    } else {
      hash = artifacts.read(artifact).then(({ bytes }) => bytesHash(bytes));
      hash.catch(() => this.hashes.delete(ref));
    }
    this.hashes.set(ref, hash);
    while (this.hashes.size > HASHES_KEPT) this.hashes.delete(this.hashes.keys().next().value!);
    return hash;
  }
}

/** When one of the service's signed blob URLs expires (its `expires`, unix seconds), in ms; undefined when it carries none. */
function expiryOf(ref: string): number | undefined {
  const expires = Number(new URL(ref).searchParams.get('expires') ?? NaN);
  return Number.isSafeInteger(expires) ? expires * 1000 : undefined;
}
