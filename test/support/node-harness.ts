import { findNode, type ArtifactStore, type NodeContext, type NodeDefinition } from '../../services/nodes';

/** An artifact port for nodes that must not touch artifacts: any use fails the test. */
export const noArtifacts: ArtifactStore = {
  put: () => Promise.reject(new Error('this node should store no artifact')),
  read: () => Promise.reject(new Error('this node should read no artifact')),
  fetchForeign: () => Promise.reject(new Error('this node should fetch no file')),
};

/** A node context with an optional signal and artifact port. */
export function nodeContext(signal: AbortSignal = new AbortController().signal, artifacts: ArtifactStore = noArtifacts): NodeContext {
  return { signal, progress: () => undefined, artifacts };
}

/** The platform node with this id; fails the test when there is none. */
export function platformNode(id: string): NodeDefinition {
  const found = findNode(id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}
