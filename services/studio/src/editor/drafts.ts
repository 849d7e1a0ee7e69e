import type { EditorWorkflow } from '../../../contract';
import { emptyWorkflow, type Graph } from './model';

/**
 * Never lose work: every change is kept in localStorage until the server confirms the save, and
 * a reload prefers that copy over the server's when it is newer.
 */

export interface LocalDraft extends Graph {
  /** When it was written (ms since the epoch). */
  at: number;
}

const key = (workflowId: string) => `studio.editor.draft.${workflowId}`;

export function readLocalDraft(workflowId: string, storage: Storage = localStorage): LocalDraft | null {
  try {
    const raw = storage.getItem(key(workflowId));
    if (!raw) return null;
    const value = JSON.parse(raw) as Partial<LocalDraft>;
    if (!value.definition || !Array.isArray(value.definition.nodes) || !value.layout || typeof value.at !== 'number') return null;
    return value as LocalDraft;
  } catch {
    return null;
  }
}

export function writeLocalDraft(workflowId: string, graph: Graph, storage: Storage = localStorage): void {
  try {
    storage.setItem(key(workflowId), JSON.stringify({ definition: graph.definition, layout: graph.layout, at: Date.now() }));
  } catch {
    // Storage full or disabled: the server save is still under way.
  }
}

export function clearLocalDraft(workflowId: string, storage: Storage = localStorage): void {
  try {
    storage.removeItem(key(workflowId));
  } catch {
    // nothing to do
  }
}

export function serverGraph(workflow: EditorWorkflow): Graph {
  return { definition: workflow.draft ?? emptyWorkflow(), layout: workflow.layout ?? { nodes: {} } };
}

export function sameGraph(a: Graph, b: Graph): boolean {
  return JSON.stringify(a.definition) === JSON.stringify(b.definition) && JSON.stringify(a.layout) === JSON.stringify(b.layout);
}

/**
 * What to open: the local copy when it holds changes the server does not have and was written
 * after the server's last change; otherwise the server's draft. `unsaved` says the local copy won.
 */
export function initialGraph(workflow: EditorWorkflow, local: LocalDraft | null): { graph: Graph; unsaved: boolean } {
  const server = serverGraph(workflow);
  if (!local || sameGraph(local, server)) return { graph: server, unsaved: false };
  const serverAt = Date.parse(workflow.updatedAt);
  if (Number.isFinite(serverAt) && serverAt > local.at) return { graph: server, unsaved: false };
  return { graph: { definition: local.definition, layout: local.layout }, unsaved: true };
}
