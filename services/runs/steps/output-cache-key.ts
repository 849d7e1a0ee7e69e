import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import type { Artifact } from '../../contract';
import { isDataConnector } from '../../engine';
import { applyDefaults, type NodeDefinition, type NodeInputs } from '../../nodes';

/** The SHA-256 (hex) of the bytes behind an artifact's `ref`. */
export type ContentHash = (artifact: Artifact) => Promise<string>;

const sha256 = (text: string | Buffer): string => createHash('sha256').update(text).digest('hex');

/** A data port's value as the key sees it: a `ref` by the hash of its bytes, an inline value as it is. */
async function keyedArtifact(value: unknown, contentHash: ContentHash): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((item) => keyedArtifact(item, contentHash)));
  if (value === null || typeof value !== 'object' || typeof (value as { ref?: unknown }).ref !== 'string') return value;
  const { ref: _ref, ...envelope } = value as Artifact;
  return { ...envelope, sha256: await contentHash(value as Artifact) };
}

/**
 * The output cache's key of a node called on `inputs` (docs/runs.md, Output caching): SHA-256 over
 * a stable serialization (sorted keys) of the node's id, the hash of its spec (nodes have no
 * version of their own: a change of ports, defaults or description is a change of node), its
 * revision when it has one (a catalog entry's hash: a changed price or request mapping) and its
 * inputs with defaults filled, each artifact of a data port by the SHA-256 of its bytes instead of
 * its ref (the same bytes uploaded twice, or made by two runs, are one input). The organization is
 * not in the key: it is the other half of the entry's identity where the entry is stored.
 */
export async function outputCacheKey(definition: NodeDefinition, inputs: NodeInputs, contentHash: ContentHash): Promise<string> {
  const { spec } = definition;
  const filled = applyDefaults(spec, inputs);
  const keyed: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(filled)) {
    if (value === undefined) continue;
    const port = spec.inputs[name];
    keyed[name] = port && isDataConnector(port.connector.id) ? await keyedArtifact(value, contentHash) : value;
  }
  const revision = definition.revision === undefined ? {} : { revision: definition.revision };
  return sha256(stringify({ node: spec.id, spec: sha256(stringify(spec) ?? ''), ...revision, inputs: keyed }) ?? '');
}

/** The refs among a node's inputs or outputs (data ports hold Artifacts; value ports may carry any JSON, only their artifacts count). */
export function refsIn(values: Record<string, unknown>): string[] {
  const refs: string[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value !== null && typeof value === 'object') {
      const ref = (value as { ref?: unknown }).ref;
      if (typeof ref === 'string') refs.push(ref);
      else Object.values(value).forEach(visit);
    }
  };
  visit(values);
  return refs;
}

/** The SHA-256 of bytes, as `ContentHash` answers it. */
export function bytesHash(bytes: Buffer): string {
  return sha256(bytes);
}
