import { useEffect, useRef } from 'react';
import type { StoreApi } from 'zustand/vanilla';
import { copyNodes, pasteNodes, readClipboard, writeClipboard } from './clipboard';
import type { Graph } from './model';
import type { EditorState } from './store';

/** Whether a key press belongs to the canvas: focus on the page itself or inside the canvas. */
function onCanvasOrPage(target: EventTarget | null): boolean {
  return !(target instanceof HTMLElement) || target === document.body || target.closest('.react-flow') !== null;
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

export interface EditorKeyActions {
  store: StoreApi<EditorState>;
  apply(change: (g: Graph) => Graph): void;
  select(ids: string[]): void;
  deleteSelection(): void;
  showToast(text: string, tone?: 'error' | 'info'): void;
  /** Escape also drops the selected connections. */
  clearEdgeSelection(): void;
}

/** The editor's keyboard: undo/redo, copy/paste, select all, delete, Escape (never while typing in a field). */
export function useEditorKeys({ store, apply, select, deleteSelection, showToast, clearEdgeSelection }: EditorKeyActions): void {
  const clear = useRef(clearEdgeSelection);
  clear.current = clearEdgeSelection;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e.target)) return;
      const mod = e.ctrlKey || e.metaKey;
      const k = e.key.toLowerCase();
      if (mod && k === 'z' && !e.shiftKey) {
        e.preventDefault();
        store.getState().undo();
      } else if (mod && ((k === 'z' && e.shiftKey) || k === 'y')) {
        e.preventDefault();
        store.getState().redo();
      } else if (mod && k === 'c') {
        const clip = copyNodes(store.getState().graph, store.getState().selected);
        if (clip) {
          writeClipboard(clip);
          showToast(`Copied ${clip.nodes.length} node${clip.nodes.length === 1 ? '' : 's'}.`, 'info');
        }
      } else if (mod && k === 'v') {
        const clip = readClipboard();
        if (!clip) return;
        e.preventDefault();
        let ids: string[] = [];
        apply((g) => {
          const r = pasteNodes(g, clip);
          ids = r.ids;
          return r.graph;
        });
        select(ids);
      } else if (mod && k === 'a') {
        e.preventDefault();
        select(store.getState().graph.definition.nodes.map((n) => n.id));
      } else if ((e.key === 'Delete' || e.key === 'Backspace') && onCanvasOrPage(e.target)) {
        e.preventDefault();
        deleteSelection();
      } else if (e.key === 'Escape') {
        select([]);
        clear.current();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [apply, deleteSelection, select, showToast, store]);
}

