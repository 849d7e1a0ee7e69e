import { useCallback, useEffect, useRef, useState } from 'react';
import { useStore } from 'zustand';
import type { StoreApi } from 'zustand/vanilla';
import type { EditorWorkflow, Workflow } from '../../../contract';
import { client, errorText } from '../lib/api';
import { clearLocalDraft, writeLocalDraft } from './drafts';
import type { EditorState } from './store';

export type SaveState = { kind: 'saved' } | { kind: 'unsaved' } | { kind: 'saving' } | { kind: 'error'; message: string };

const SAVE_DEBOUNCE_MS = 600;

export interface DraftSavingOptions {
  store: StoreApi<EditorState>;
  workflowId: string;
  /** The editor opened on a local copy newer than the server's: it is saved at once. */
  startUnsaved: boolean;
  /** The server's answer to a save, and the definition it saved (its problems' indexes refer to it). */
  onSaved(answer: EditorWorkflow, saved: Workflow): void;
  /** The problems a server that refused the save named, with the definition it refused. */
  onRefused(problems: { path: string; message: string }[], refused: Workflow): void;
}

/**
 * Saving the draft: to localStorage at once on every change, to the server after a pause, one
 * request at a time (a change made while one is out gets its own save), with a warning before
 * leaving the page while anything is unsaved.
 */
export function useDraftSaving({ store, workflowId, startUnsaved, onSaved, onRefused }: DraftSavingOptions): {
  save: SaveState;
  doSave(): Promise<void>;
  /** Saves the canvas now (after a save in flight): a run starts from the server's draft, so it must be the canvas's. */
  saveNow(): Promise<void>;
} {
  const revision = useStore(store, (s) => s.revision);
  const [save, setSave] = useState<SaveState>(startUnsaved ? { kind: 'unsaved' } : { kind: 'saved' });
  // The callbacks change with every render of the editor; saving must not restart with them.
  const handlers = useRef({ onSaved, onRefused });
  handlers.current = { onSaved, onRefused };
  const savedRevision = useRef(startUnsaved ? -1 : 0);
  const inFlight = useRef(false);

  const doSave = useCallback(async () => {
    if (inFlight.current) return;
    const { graph: g, revision: rev } = store.getState();
    if (rev === savedRevision.current) return;
    inFlight.current = true;
    setSave({ kind: 'saving' });
    try {
      const answer = await client.routes['editor.workflows.update']({ id: workflowId, definition: g.definition, layout: g.layout });
      savedRevision.current = rev;
      handlers.current.onSaved(answer, g.definition);
      if (store.getState().revision === rev) {
        clearLocalDraft(workflowId);
        setSave({ kind: 'saved' });
      } else {
        setSave({ kind: 'unsaved' });
      }
    } catch (err) {
      // A server that refuses invalid drafts names what is wrong: show it on the nodes.
      const issues = (err as { issues?: unknown }).issues;
      const refused = Array.isArray(issues)
        ? (issues as { path?: unknown; message?: unknown }[])
            .filter((i) => typeof i.path === 'string' && i.path.startsWith('definition.') && typeof i.message === 'string')
            .map((i) => ({ path: (i.path as string).slice('definition.'.length), message: i.message as string }))
        : [];
      if (refused.length > 0) handlers.current.onRefused(refused, g.definition);
      setSave({ kind: 'error', message: errorText(err) });
    } finally {
      inFlight.current = false;
    }
    // A change made while the request was out gets its own save.
    if (store.getState().revision !== savedRevision.current && store.getState().revision !== rev) {
      setTimeout(() => void doSave(), SAVE_DEBOUNCE_MS);
    }
  }, [store, workflowId]);

  const saveNow = useCallback(async () => {
    for (let tries = 0; tries < 3; tries++) {
      while (inFlight.current) await new Promise((resolve) => setTimeout(resolve, 50));
      if (store.getState().revision === savedRevision.current) return;
      await doSave();
    }
    if (store.getState().revision !== savedRevision.current) throw new Error('The draft could not be saved, so it was not run; retry the save, then run again.');
  }, [store, doSave]);

  useEffect(() => {
    if (revision === savedRevision.current) return;
    writeLocalDraft(workflowId, store.getState().graph);
    setSave((s) => (s.kind === 'saving' ? s : { kind: 'unsaved' }));
    const t = setTimeout(() => void doSave(), SAVE_DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [revision, doSave, workflowId, store]);

  // A local copy newer than the server's: save it now.
  useEffect(() => {
    if (startUnsaved) void doSave();
  }, [startUnsaved, doSave]);

  useEffect(() => {
    if (save.kind === 'saved') return;
    const warn = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [save.kind]);

  return { save, doSave, saveNow };
}
