import { createStore, type StoreApi } from 'zustand/vanilla';
import { emptyWorkflow, type Graph } from './model';

/**
 * The editor's state: the graph (draft + layout) with an undo history of whole snapshots. Every
 * change goes through `apply(change, coalesce?)`; changes with the same coalesce key in quick
 * succession (typing in one field, one drag) make one undo step.
 */
export interface EditorState {
  graph: Graph;
  past: Graph[];
  future: Graph[];
  /** Bumped on every change of the graph (not on reset), so the page knows to save. */
  revision: number;
  selected: string[];
  apply(change: (graph: Graph) => Graph, coalesce?: string): void;
  undo(): void;
  redo(): void;
  /** Replaces the graph and forgets the history (a load). */
  reset(graph: Graph): void;
  select(ids: string[]): void;
}

export const HISTORY_LIMIT = 200;
const COALESCE_MS = 1200;

export function createEditorStore(initial?: Graph): StoreApi<EditorState> {
  let lastKey: string | undefined;
  let lastAt = 0;
  return createStore<EditorState>((set, get) => ({
    graph: initial ?? { definition: emptyWorkflow(), layout: { nodes: {} } },
    past: [],
    future: [],
    revision: 0,
    selected: [],
    apply(change, coalesce) {
      const { graph, past, revision } = get();
      const next = change(graph);
      if (next === graph) return;
      const now = Date.now();
      const merge = coalesce !== undefined && coalesce === lastKey && now - lastAt < COALESCE_MS && past.length > 0;
      lastKey = coalesce;
      lastAt = now;
      const ids = new Set(next.definition.nodes.map((n) => n.id));
      set({
        graph: next,
        past: merge ? past : [...past, graph].slice(-HISTORY_LIMIT),
        future: [],
        revision: revision + 1,
        selected: get().selected.filter((id) => ids.has(id)),
      });
    },
    undo() {
      const { past, graph, future, revision } = get();
      const previous = past.at(-1);
      if (!previous) return;
      lastKey = undefined;
      set({ graph: previous, past: past.slice(0, -1), future: [graph, ...future], revision: revision + 1 });
    },
    redo() {
      const { past, graph, future, revision } = get();
      const next = future[0];
      if (!next) return;
      lastKey = undefined;
      set({ graph: next, past: [...past, graph], future: future.slice(1), revision: revision + 1 });
    },
    reset(graph) {
      lastKey = undefined;
      set({ graph, past: [], future: [], selected: [] });
    },
    select(ids) {
      set({ selected: ids });
    },
  }));
}
