import { describe, expect, it } from 'vitest';
import type { EditorWorkflow } from '../../../contract';
import { clearLocalDraft, initialGraph, readLocalDraft, writeLocalDraft } from './drafts';

function memoryStorage(): Storage {
  const map = new Map<string, string>();
  return {
    get length() { return map.size; },
    clear: () => map.clear(),
    getItem: (k) => map.get(k) ?? null,
    key: (i) => [...map.keys()][i] ?? null,
    removeItem: (k) => void map.delete(k),
    setItem: (k, v) => void map.set(k, v),
  };
}

const workflow = (updatedAt: string): EditorWorkflow => ({
  id: 'w1', name: 'W', address: null, latest: null, createdAt: updatedAt, updatedAt, lastPublishedAt: null, draftPending: true,
  draft: { version: 2, nodes: [{ id: 'a', uses: 'output', inputs: { value: 1 } }] },
  layout: { nodes: { a: { x: 1, y: 2 } } },
  problems: [],
});

describe('local drafts', () => {
  it('writes, reads and clears a draft per workflow', () => {
    const s = memoryStorage();
    const graph = { definition: { version: 2 as const, nodes: [] }, layout: { nodes: {} } };
    expect(readLocalDraft('w1', s)).toBeNull();
    writeLocalDraft('w1', graph, s);
    expect(readLocalDraft('w1', s)).toMatchObject(graph);
    expect(readLocalDraft('w2', s)).toBeNull();
    clearLocalDraft('w1', s);
    expect(readLocalDraft('w1', s)).toBeNull();
    s.setItem('studio.editor.draft.w1', '{not json');
    expect(readLocalDraft('w1', s)).toBeNull();
  });

  it('opens the unsaved local copy when it is newer than the server draft', () => {
    const server = workflow('2026-01-01T00:00:00.000Z');
    const local = { definition: { version: 2 as const, nodes: [] }, layout: { nodes: {} }, at: Date.parse('2026-01-01T00:00:05.000Z') };
    expect(initialGraph(server, local)).toEqual({ graph: { definition: local.definition, layout: local.layout }, unsaved: true });
  });

  it('opens the server draft when there is no local copy, the same one, or an older one', () => {
    const server = workflow('2026-01-01T00:00:10.000Z');
    const serverGraph = { definition: server.draft!, layout: server.layout! };
    expect(initialGraph(server, null)).toEqual({ graph: serverGraph, unsaved: false });
    expect(initialGraph(server, { ...serverGraph, at: Date.parse('2026-01-02T00:00:00Z') }).unsaved).toBe(false);
    const older = { definition: { version: 2 as const, nodes: [] }, layout: { nodes: {} }, at: Date.parse('2026-01-01T00:00:05.000Z') };
    expect(initialGraph(server, older)).toEqual({ graph: serverGraph, unsaved: false });
    // a workflow without a draft opens empty
    expect(initialGraph({ ...server, draft: null, layout: null }, null).graph).toEqual({ definition: { version: 2, nodes: [] }, layout: { nodes: {} } });
  });
});
