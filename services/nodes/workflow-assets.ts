import type { Artifact, Workflow } from '../contract';
import type { BlobStore, BlobUrlSigner } from '../blobs';
import type { ArtifactRecorder } from './artifact-recorder';
import { BlobArtifactStore } from './blob-artifact-store';
import type { RemoteFetcher } from './fetch/input-fetcher';

/**
 * Recipe assets: files a workflow definition carries (an input's default image, a const file,
 * a literal artifact input). SPEC Limits: they "live as long as the workflow", unlike run
 * artifacts (30 days). They are stored under `workflows/<id>/assets/`, recorded without an
 * expiry (so the retention sweeper passes them over), and handed out as signed URLs that expire
 * far in the future; the blob route refuses them once their workflow is deleted, and deletion
 * hands them to the sweeper (docs/workflows.md, "Recipe assets").
 */

/** Far enough that no asset URL expires while its workflow lives (the signer takes unix seconds, 12 digits at most). */
export const ASSET_URLS_EXPIRE_AT = new Date(Date.UTC(9999, 11, 31));

/** The key prefix of a workflow's assets; the blob route recognises it. */
export function workflowAssetPrefix(workflowId: string): string {
  return `workflows/${workflowId}/assets`;
}

/** The workflow whose asset a blob key is, or null for any other key. */
export function assetWorkflowOf(key: string): string | null {
  const match = /^workflows\/([0-9a-f-]{36})\/assets\//.exec(key);
  return match ? match[1]! : null;
}

const ENVELOPE_KEYS = new Set(['kind', 'ref', 'mimeType', 'metadata']);

/** A literal artifact envelope with a ref; other objects (structured values) are left alone. */
function isRefArtifact(value: unknown): value is Artifact & { ref: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  return typeof record.ref === 'string' && Object.keys(record).every((key) => ENVELOPE_KEYS.has(key));
}

/** Applies `map` to every ref artifact among the literal input values of every node (arrays of them included). */
function mapArtifacts(definition: Workflow, map: (artifact: Artifact & { ref: string }) => Artifact): Workflow {
  const mapValue = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(mapValue);
    return isRefArtifact(value) ? map(value) : value;
  };
  return {
    ...definition,
    nodes: (definition.nodes ?? []).map((node) =>
      node.inputs ? { ...node, inputs: Object.fromEntries(Object.entries(node.inputs).map(([port, value]) => [port, mapValue(value)])) } : node,
    ),
  };
}

/** Every ref artifact among the literal input values of a definition's nodes. */
export function refArtifactsOf(definition: Workflow): (Artifact & { ref: string })[] {
  const found: (Artifact & { ref: string })[] = [];
  mapArtifacts(definition, (artifact) => (found.push(artifact), artifact));
  return found;
}

/**
 * The definition with each ref artifact replaced by `hosted.get(ref)`; null when a ref is not
 * in `hosted` (the draft changed after its assets were copied).
 */
export function withHostedRefs(definition: Workflow, hosted: ReadonlyMap<string, Artifact>): Workflow | null {
  let complete = true;
  const rewritten = mapArtifacts(definition, (artifact) => {
    const copy = hosted.get(artifact.ref);
    if (!copy) complete = false;
    // The envelope as written (kind, metadata), pointing at the copy.
    return copy ? { ...artifact, ref: copy.ref!, ...(copy.mimeType ? { mimeType: copy.mimeType } : {}) } : artifact;
  });
  return complete ? rewritten : null;
}

export interface WorkflowAssetsOptions {
  store: BlobStore;
  signer: BlobUrlSigner;
  publicBaseUrl: string;
  /** Records assets (run id null, no expiry). */
  recorder: ArtifactRecorder;
  /** Fetches foreign refs safely (`createInputFetcher`): they become assets too. */
  fetchRemote: RemoteFetcher;
  /** Largest asset read back to be copied, bytes. */
  maxBytes: number;
}

/** Stores a workflow's assets: uploads, and copies of the refs of a definition being published. */
export class WorkflowAssets {
  constructor(private readonly options: WorkflowAssetsOptions) {}

  private storeFor(workflowId: string): BlobArtifactStore {
    const { store, signer, publicBaseUrl, recorder, fetchRemote, maxBytes } = this.options;
    return new BlobArtifactStore({
      store,
      signer,
      publicBaseUrl,
      keyPrefix: workflowAssetPrefix(workflowId),
      urlTtlSeconds: 1,
      urlExpiresAt: ASSET_URLS_EXPIRE_AT,
      recorder,
      fetchRemote,
      maxReadBytes: maxBytes,
    });
  }

  /** Stores uploaded bytes as an asset of the workflow; the answer is a ref artifact usable in its definition. */
  upload(workflowId: string, bytes: Buffer, mimeType: string): Promise<Artifact> {
    return this.storeFor(workflowId).put(bytes, { mimeType });
  }

  /**
   * Copies every ref of `definition` into the workflow's assets (refs already its assets stay),
   * one copy per distinct ref; the answer maps each ref to its asset artifact. Rejects with
   * `validation_failed` or `not_found` when a ref cannot be read (an expired run artifact URL, a
   * foreign address the fetching rules refuse).
   */
  async host(workflowId: string, definition: Workflow): Promise<Map<string, Artifact>> {
    const store = this.storeFor(workflowId);
    const hosted = new Map<string, Artifact>();
    for (const artifact of refArtifactsOf(definition)) {
      if (!hosted.has(artifact.ref)) hosted.set(artifact.ref, await store.adoptCopy(artifact));
    }
    return hosted;
  }
}
