import {
  Background, Controls, MiniMap, Panel, ReactFlow, ReactFlowProvider, useReactFlow,
  type Connection as FlowConnection, type Edge as FlowEdge, type EdgeChange, type FinalConnectionState, type IsValidConnection, type NodeChange as FlowNodeChange,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useStore } from 'zustand';
import { validateWorkflow } from '../../../engine/validate-workflow';
import type { EditorWorkflow, PublishedWorkflow } from '../../../contract';
import { client, errorText } from '../lib/api';
import { HistoryPanel } from '../publish/history-panel';
import { PublishDialog } from '../publish/publish-dialog';
import { hasUnfinishedRun } from '../runs/resume';
import { RunPanel } from '../runs/run-panel';
import type { StepViews } from '../runs/step-views';
import { autoLayout } from './auto-layout';
import { useCatalog } from './catalog';
import { clearLocalDraft, initialGraph, readLocalDraft, writeLocalDraft } from './drafts';
import './editor.css';
import { toFlow } from './flow';
import { Inspector } from './inspector';
import { exportWorkflow, importWorkflow, type Format } from './io';
import {
  addNode, CONNECTOR_IDS, connect, connectionProblem, copyNodes, deleteNodes, disconnect, mapProblems, moveNodes, pasteNodes,
  problemsByNode, renameNode, setInput, setMountVersion, setNodeFields, setOutputType, type Clipboard, type Connection, type Graph, type NewNode, type NodeProblem, type Position,
} from './model';
import { nodeTypes, connectorClass } from './node-card';
import { NODE_DRAG_TYPE, Palette } from './palette';
import { createEditorStore, type EditorState } from './store';
import type { StoreApi } from 'zustand/vanilla';

type SaveState = { kind: 'saved' } | { kind: 'unsaved' } | { kind: 'saving' } | { kind: 'error'; message: string };

const SAVE_DEBOUNCE_MS = 600;

/** The graph editor of one workflow (`/workflows/:id`). */
export function EditorPage() {
  const { id = '' } = useParams();
  const [workflow, setWorkflow] = useState<EditorWorkflow | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setWorkflow(null);
    setError(null);
    client.routes['editor.workflows.get']({ id }).then(
      (w) => live && setWorkflow(w),
      (err: unknown) => live && setError(errorText(err)),
    );
    return () => {
      live = false;
    };
  }, [id]);
  if (error) {
    return (
      <main className="page">
        <div className="empty" role="alert">
          <h1>Could not open this workflow</h1>
          <p>{error}</p>
          <Link className="button" to="/">Back to workflows</Link>
        </div>
      </main>
    );
  }
  if (!workflow) return <main className="page-loading" aria-busy="true">Loading the workflow…</main>;
  return (
    <ReactFlowProvider>
      <Editor key={workflow.id} initial={workflow} />
    </ReactFlowProvider>
  );
}

const CLIPBOARD_KEY = 'studio.editor.clipboard';

/** Copied nodes live in localStorage, so they paste into another workflow or tab too. */
function writeClipboard(clip: Clipboard) {
  try {
    localStorage.setItem(CLIPBOARD_KEY, JSON.stringify(clip));
  } catch {
    // storage unavailable: nothing to paste later
  }
}

function readClipboard(): Clipboard | null {
  try {
    const clip = JSON.parse(localStorage.getItem(CLIPBOARD_KEY) ?? 'null') as Clipboard | null;
    return clip && Array.isArray(clip.nodes) && clip.nodes.length > 0 ? clip : null;
  } catch {
    return null;
  }
}

/** Whether a key press belongs to the canvas: focus on the page itself or inside the canvas. */
function onCanvasOrPage(target: EventTarget | null): boolean {
  return !(target instanceof HTMLElement) || target === document.body || target.closest('.react-flow') !== null;
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

function download(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function parseHandle(handle: string | null | undefined, side: 'in' | 'out'): string | null {
  const prefix = `${side}:`;
  return handle?.startsWith(prefix) ? handle.slice(prefix.length) : null;
}

function toConnection(c: FlowConnection | { source: string; target: string; sourceHandle?: string | null; targetHandle?: string | null }): Connection | null {
  const sourcePort = parseHandle(c.sourceHandle, 'out');
  const targetPort = parseHandle(c.targetHandle, 'in');
  if (!c.source || !c.target || !sourcePort || !targetPort) return null;
  return { source: c.source, sourcePort, target: c.target, targetPort };
}

function Editor({ initial }: { initial: EditorWorkflow }) {
  const navigate = useNavigate();
  const flow = useReactFlow();
  const [workflow, setWorkflow] = useState(initial);
  const start = useMemo(() => initialGraph(initial, readLocalDraft(initial.id)), [initial]);
  const storeRef = useRef<StoreApi<EditorState> | null>(null);
  storeRef.current ??= createEditorStore(start.graph);
  const store = storeRef.current;
  const graph = useStore(store, (s) => s.graph);
  const selected = useStore(store, (s) => s.selected);
  const revision = useStore(store, (s) => s.revision);
  const canUndo = useStore(store, (s) => s.past.length > 0);
  const canRedo = useStore(store, (s) => s.future.length > 0);
  const { catalog, specs, loading: catalogLoading, error: catalogError } = useCatalog(graph.definition);

  // The server's problems with the last saved definition (null when its answer had none to give).
  const [serverProblems, setServerProblems] = useState<NodeProblem[] | null>(() =>
    Array.isArray(initial.problems) ? mapProblems(initial.draft ?? { version: 2, nodes: [] }, initial.problems) : null,
  );
  const [save, setSave] = useState<SaveState>(start.unsaved ? { kind: 'unsaved' } : { kind: 'saved' });
  const [toast, setToast] = useState<{ text: string; tone: 'error' | 'info' } | null>(null);
  // A run still going when the page was left (a reload, a crash) is followed again at once.
  const [panel, setPanel] = useState<'run' | null>(() => (hasUnfinishedRun(initial.id) ? 'run' : null));
  const [dialog, setDialog] = useState<'publish' | 'history' | 'import' | null>(null);
  const [steps, setSteps] = useState<StepViews | undefined>(undefined);
  const [dragPos, setDragPos] = useState<Record<string, Position>>({});
  const [selectedEdges, setSelectedEdges] = useState<string[]>([]);
  const measured = useRef(new Map<string, { width: number; height: number }>());
  const canvasRef = useRef<HTMLDivElement>(null);

  const showToast = useCallback((text: string, tone: 'error' | 'info' = 'error') => setToast({ text, tone }), []);
  useEffect(() => {
    if (!toast) return;
    const t = setTimeout(() => setToast(null), 5000);
    return () => clearTimeout(t);
  }, [toast]);

  // Nodes without a position (an old draft, an import) are laid out once.
  useEffect(() => {
    const g = store.getState().graph;
    if (g.definition.nodes.some((n) => !g.layout.nodes[n.id])) {
      store.getState().reset({ ...g, layout: autoLayout(g.definition, g.layout, catalog, true) });
    }
    // Only on open (the catalog may still be loading; sizes are estimated).
  }, []);

  // --- Saving: localStorage at once, the server after a pause; the answer's problems are shown.
  const savedRevision = useRef(start.unsaved ? -1 : 0);
  const inFlight = useRef(false);
  const doSave = useCallback(async () => {
    if (inFlight.current) return;
    const { graph: g, revision: rev } = store.getState();
    if (rev === savedRevision.current) return;
    inFlight.current = true;
    setSave({ kind: 'saving' });
    try {
      const answer = await client.routes['editor.workflows.update']({ id: initial.id, definition: g.definition, layout: g.layout });
      savedRevision.current = rev;
      setWorkflow(answer);
      setServerProblems(Array.isArray(answer.problems) ? mapProblems(g.definition, answer.problems) : null);
      if (store.getState().revision === rev) {
        clearLocalDraft(initial.id);
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
      if (refused.length > 0) setServerProblems(mapProblems(g.definition, refused));
      setSave({ kind: 'error', message: errorText(err) });
    } finally {
      inFlight.current = false;
    }
    // A change made while the request was out gets its own save.
    if (store.getState().revision !== savedRevision.current && store.getState().revision !== rev) {
      setTimeout(() => void doSave(), SAVE_DEBOUNCE_MS);
    }
  }, [store, initial.id]);

  /** Saves the canvas now (after a save in flight): a run starts from the server's draft, so it must be the canvas's. */
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
    writeLocalDraft(initial.id, store.getState().graph);
    setSave((s) => (s.kind === 'saving' ? s : { kind: 'unsaved' }));
    const t = setTimeout(() => void doSave(), SAVE_DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [revision, doSave, initial.id, store]);

  // A local copy newer than the server's: save it now.
  useEffect(() => {
    if (start.unsaved) void doSave();
  }, [start.unsaved, doSave]);

  useEffect(() => {
    if (save.kind === 'saved') return;
    const warn = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [save.kind]);

  // --- Operations
  const apply = useCallback((change: (g: Graph) => Graph, coalesce?: string) => store.getState().apply(change, coalesce), [store]);
  const select = useCallback((ids: string[]) => store.getState().select(ids), [store]);

  const viewportCentre = useCallback((): Position => {
    const rect = canvasRef.current?.getBoundingClientRect();
    if (!rect) return { x: 0, y: 0 };
    const p = flow.screenToFlowPosition({ x: rect.left + rect.width / 2, y: rect.top + rect.height / 2 });
    const jitter = (store.getState().graph.definition.nodes.length % 5) * 24;
    return { x: Math.round(p.x - 105 + jitter), y: Math.round(p.y - 50 + jitter) };
  }, [flow, store]);

  const add = useCallback((spec: NewNode, at?: Position) => {
    let id = '';
    apply((g) => {
      const r = addNode(g, spec, at ?? viewportCentre());
      id = r.id;
      return r.graph;
    });
    select([id]);
    return id;
  }, [apply, select, viewportCentre]);

  const onDrop = useCallback((e: DragEvent) => {
    const raw = e.dataTransfer.getData(NODE_DRAG_TYPE);
    if (!raw) return;
    e.preventDefault();
    const p = flow.screenToFlowPosition({ x: e.clientX, y: e.clientY });
    add(JSON.parse(raw) as NewNode, { x: Math.round(p.x - 105), y: Math.round(p.y - 20) });
  }, [add, flow]);

  const onDragOver = useCallback((e: DragEvent) => {
    if (e.dataTransfer.types.includes(NODE_DRAG_TYPE)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    }
  }, []);

  const isValidConnection = useCallback<IsValidConnection>((c) => {
    const conn = toConnection(c);
    return conn !== null && connectionProblem(store.getState().graph, catalog, conn) === null;
  }, [catalog, store]);

  const onConnect = useCallback((c: FlowConnection) => {
    const conn = toConnection(c);
    if (!conn) return;
    const problem = connectionProblem(store.getState().graph, catalog, conn);
    if (problem) {
      showToast(problem);
      return;
    }
    apply((g) => connect(g, conn));
  }, [apply, catalog, showToast, store]);

  // Dragging an edge's end: onto another input moves the connection, into empty space removes it.
  const reconnected = useRef(true);
  const onReconnectStart = useCallback(() => {
    reconnected.current = false;
  }, []);
  const onReconnect = useCallback((old: FlowEdge, c: FlowConnection) => {
    reconnected.current = true;
    const conn = toConnection(c);
    const oldPort = parseHandle(old.targetHandle, 'in');
    if (!conn || !oldPort) return;
    const without = disconnect(store.getState().graph, old.target, oldPort);
    const problem = connectionProblem(without, catalog, conn);
    if (problem) {
      showToast(problem);
      return;
    }
    apply((g) => connect(disconnect(g, old.target, oldPort), conn));
  }, [apply, catalog, showToast, store]);
  const onReconnectEnd = useCallback((_: MouseEvent | TouchEvent, old: FlowEdge) => {
    if (!reconnected.current) {
      const oldPort = parseHandle(old.targetHandle, 'in');
      if (oldPort) apply((g) => disconnect(g, old.target, oldPort));
    }
    reconnected.current = true;
  }, [apply]);

  const onConnectEnd = useCallback((_: MouseEvent | TouchEvent, state: FinalConnectionState) => {
    if (state.isValid || !state.fromHandle || !state.toHandle) return;
    const from = state.fromHandle;
    const to = state.toHandle;
    const source = from.type === 'source' ? from : to;
    const target = from.type === 'source' ? to : from;
    if (source.type !== 'source' || target.type !== 'target') {
      showToast(`Connect an output (right side) to an input (left side).`);
      return;
    }
    const conn = toConnection({ source: source.nodeId, sourceHandle: source.id, target: target.nodeId, targetHandle: target.id });
    const problem = conn ? connectionProblem(store.getState().graph, catalog, conn) : null;
    if (problem) showToast(problem);
  }, [catalog, showToast, store]);

  const deleteSelection = useCallback(() => {
    const nodes = store.getState().selected;
    if (nodes.length > 0) apply((g) => deleteNodes(g, nodes));
    else if (selectedEdges.length > 0) {
      const edges = selectedEdges;
      apply((g) => edges.reduce((acc, id) => {
        const target = id.slice(id.indexOf('->') + 2);
        const dot = target.lastIndexOf('.');
        return disconnect(acc, target.slice(0, dot), target.slice(dot + 1));
      }, g));
      setSelectedEdges([]);
    }
  }, [apply, selectedEdges, store]);

  const runAutoLayout = useCallback(() => {
    apply((g) => ({ ...g, layout: autoLayout(g.definition, g.layout, catalog) }));
    setTimeout(() => void flow.fitView({ padding: 0.2, duration: 250 }), 50);
  }, [apply, catalog, flow]);

  // Keyboard: undo/redo, copy/paste, delete (not while typing in a field).
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
        setSelectedEdges([]);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [apply, deleteSelection, select, showToast, store]);

  // --- Problems: the engine's own check runs here as you edit (same rules and words as the
  // server's); once a save is confirmed, the server's answer is the authority.
  const localProblems = useMemo(() => {
    if (catalog.specs.size === 0) return null;
    try {
      const check = validateWorkflow(graph.definition, catalog.specs);
      return check.ok ? [] : mapProblems(graph.definition, check.problems);
    } catch {
      return null;
    }
  }, [graph.definition, catalog.specs]);
  const problems = useMemo<NodeProblem[]>(
    () => (save.kind === 'saved' && serverProblems ? serverProblems : localProblems ?? serverProblems ?? []),
    [save.kind, serverProblems, localProblems],
  );

  // --- The canvas
  const problemMap = useMemo(() => problemsByNode(problems.filter((p) => graph.definition.nodes.some((n) => n.id === p.nodeId))), [problems, graph]);
  const shown = useMemo(() => {
    const g: Graph = Object.keys(dragPos).length > 0 ? moveNodes(graph, dragPos) : graph;
    const f = toFlow(g, catalog, { steps, problems: problemMap, selected, editable: true });
    const edgeSel = new Set(selectedEdges);
    return {
      nodes: f.nodes.map((n) => ({ ...n, measured: measured.current.get(n.id) })),
      edges: f.edges.map((e) => ({ ...e, selected: edgeSel.has(e.id) })),
    };
  }, [graph, dragPos, catalog, steps, problemMap, selected, selectedEdges]);

  const [, forceRender] = useState(0);
  const onNodesChange = useCallback((changes: FlowNodeChange[]) => {
    let sel: Set<string> | null = null;
    const moved: Record<string, Position> = {};
    let dims = false;
    for (const c of changes) {
      if (c.type === 'dimensions' && c.dimensions) {
        measured.current.set(c.id, c.dimensions);
        dims = true;
      } else if (c.type === 'position' && c.position) {
        moved[c.id] = c.position;
      } else if (c.type === 'select') {
        sel ??= new Set(store.getState().selected);
        if (c.selected) sel.add(c.id);
        else sel.delete(c.id);
      }
    }
    if (Object.keys(moved).length > 0) setDragPos((d) => ({ ...d, ...moved }));
    if (sel) {
      select([...sel]);
      if (sel.size > 0) setSelectedEdges([]);
    }
    if (dims) forceRender((n) => n + 1);
  }, [select, store]);

  const dragRef = useRef<Record<string, Position>>({});
  dragRef.current = dragPos;
  const onNodeDragStop = useCallback(() => {
    const moved = dragRef.current;
    if (Object.keys(moved).length === 0) return;
    const rounded = Object.fromEntries(Object.entries(moved).map(([id, p]) => [id, { x: Math.round(p.x), y: Math.round(p.y) }]));
    apply((g) => moveNodes(g, rounded));
    setDragPos({});
  }, [apply]);

  const onEdgesChange = useCallback((changes: EdgeChange[]) => {
    setSelectedEdges((current) => {
      const next = new Set(current);
      for (const c of changes) if (c.type === 'select') {
        if (c.selected) next.add(c.id);
        else next.delete(c.id);
      }
      return [...next];
    });
  }, []);

  const focusNode = useCallback((nodeId: string) => {
    select([nodeId]);
    const p = store.getState().graph.layout.nodes[nodeId];
    if (p) void flow.setCenter(p.x + 105, p.y + 60, { zoom: Math.max(flow.getZoom(), 0.9), duration: 300 });
  }, [flow, select, store]);

  // --- Name
  const [name, setName] = useState(initial.name);
  const [nameError, setNameError] = useState<string | null>(null);
  const commitName = useCallback(() => {
    const trimmed = name.trim();
    if (trimmed === workflow.name) return;
    if (trimmed === '') {
      setName(workflow.name);
      return;
    }
    client.routes['editor.workflows.update']({ id: workflow.id, name: trimmed }).then(
      (w) => {
        setWorkflow((cur) => ({ ...cur, name: w.name, updatedAt: w.updatedAt }));
        setNameError(null);
      },
      (err: unknown) => setNameError(errorText(err)),
    );
  }, [name, workflow]);

  // --- Import / export
  const [importErrors, setImportErrors] = useState<string[] | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const onImportFile = useCallback(async (file: File) => {
    const result = importWorkflow(await file.text());
    if (!result.ok) {
      setImportErrors(result.errors);
      setDialog('import');
      return;
    }
    apply(() => ({ definition: result.definition, layout: autoLayout(result.definition, { nodes: {} }, catalog) }));
    select([]);
    showToast(`Imported ${result.definition.nodes.length} nodes from ${file.name}. Undo (Ctrl+Z) brings the previous draft back.`, 'info');
    setTimeout(() => void flow.fitView({ padding: 0.2, duration: 250 }), 50);
  }, [apply, catalog, flow, select, showToast]);
  const onExport = useCallback((format: Format) => {
    const base = (workflow.address?.split('/')[1] ?? workflow.name).replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-|-$/g, '') || 'workflow';
    download(`${base}.${format === 'json' ? 'json' : 'yaml'}`, exportWorkflow(store.getState().graph.definition, format), format === 'json' ? 'application/json' : 'application/yaml');
  }, [store, workflow]);

  const upload = useCallback(
    (file: File) => client.routes['editor.workflows.assets']({ id: workflow.id }, { body: file, contentType: file.type || undefined }),
    [workflow.id],
  );

  const selectedNode = selected.length === 1 ? graph.definition.nodes.find((n) => n.id === selected[0]) : undefined;
  const liveProblems = problems.filter((p) => p.nodeId === null || graph.definition.nodes.some((n) => n.id === p.nodeId));
  const publishBlocked = liveProblems.length > 0
    ? `Fix the ${liveProblems.length} problem${liveProblems.length === 1 ? '' : 's'} first.`
    : save.kind !== 'saved' ? 'Wait until the draft is saved.' : graph.definition.nodes.length === 0 ? 'Add some nodes first.' : null;

  const onPublished = useCallback((published: PublishedWorkflow) => {
    setDialog(null);
    showToast(`Published ${published.address ?? ''}@${published.version}.`, 'info');
    client.routes['editor.workflows.get']({ id: workflow.id }).then((w) => setWorkflow(w), () => undefined);
  }, [showToast, workflow.id]);

  const runSteps = useCallback((s: StepViews) => setSteps(s), []);
  const closeRun = useCallback(() => {
    setPanel(null);
    setSteps(undefined);
  }, []);

  return (
    <div className="editor-page">
      <div className="editor-toolbar" role="toolbar" aria-label="Editor">
        <label className="editor-name">
          <span className="visually-hidden">Workflow name</span>
          <input
            type="text"
            value={name}
            maxLength={200}
            onChange={(e) => setName(e.target.value)}
            onBlur={commitName}
            onKeyDown={(e) => {
              if (e.key === 'Enter') (e.target as HTMLInputElement).blur();
              if (e.key === 'Escape') setName(workflow.name);
            }}
            aria-invalid={nameError ? true : undefined}
          />
        </label>
        {workflow.address && (
          <span className="muted small mono editor-address" title={`Address: ${workflow.address}${workflow.latest ? `, @latest → ${workflow.latest.version}` : ''}`}>{workflow.address}{workflow.latest ? `@${workflow.latest.version}` : ''}</span>
        )}
        <SaveIndicator save={save} onRetry={() => void doSave()} />
        {nameError && <span className="error-text small" role="alert">{nameError}</span>}
        <span className="spacer" />
        <div className="toolbar-group" role="group" aria-label="Edit">
          <button type="button" className="button small" onClick={() => store.getState().undo()} disabled={!canUndo} title="Undo (Ctrl+Z)">Undo</button>
          <button type="button" className="button small" onClick={() => store.getState().redo()} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)">Redo</button>
          <button type="button" className="button small" onClick={runAutoLayout} disabled={graph.definition.nodes.length === 0}>Auto-layout</button>
          <button type="button" className="button small" onClick={() => void flow.fitView({ padding: 0.2, duration: 250 })}>Fit view</button>
        </div>
        <div className="toolbar-group" role="group" aria-label="File">
          <button type="button" className="button small" onClick={() => fileInput.current?.click()}>Import…</button>
          <input
            ref={fileInput}
            type="file"
            className="visually-hidden"
            tabIndex={-1}
            aria-hidden
            accept=".json,.yaml,.yml,application/json,application/yaml,text/yaml"
            onChange={(e) => {
              const f = e.target.files?.[0];
              e.target.value = '';
              if (f) void onImportFile(f);
            }}
          />
          <button type="button" className="button small" onClick={() => onExport('json')}>Export JSON</button>
          <button type="button" className="button small" onClick={() => onExport('yaml')}>Export YAML</button>
        </div>
        <div className="toolbar-group" role="group" aria-label="Workflow">
          <button type="button" className="button small" onClick={() => setDialog('history')}>History</button>
          <span title={publishBlocked ?? undefined} className="tooltip-wrap">
            <button type="button" className="button small" onClick={() => setDialog('publish')} disabled={publishBlocked !== null} aria-describedby={publishBlocked ? 'publish-blocked' : undefined}>Publish…</button>
            {publishBlocked && <span id="publish-blocked" className="visually-hidden">{publishBlocked}</span>}
          </span>
          <button type="button" className="button small primary" onClick={() => setPanel(panel === 'run' ? null : 'run')} aria-pressed={panel === 'run'}>
            {panel === 'run' ? 'Hide run' : 'Run'}
          </button>
        </div>
      </div>
      {save.kind === 'error' && (
        <div className="banner error editor-save-error" role="alert">
          <span>
            <strong>Not saved on the server</strong> (your changes are kept in this browser): {save.message}
          </span>
          <button type="button" className="button small" onClick={() => void doSave()}>Retry</button>
        </div>
      )}
      <div className={`editor-body${panel === 'run' ? ' with-run' : ''}`}>
        <Palette specs={specs} loading={catalogLoading} error={catalogError} workflowId={workflow.id} onAdd={(n) => add(n)} />
        <div className="editor-canvas" ref={canvasRef} onDrop={onDrop} onDragOver={onDragOver}>
          <ReactFlow
            nodes={shown.nodes}
            edges={shown.edges}
            nodeTypes={nodeTypes}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onNodeDragStop={onNodeDragStop}
            onConnect={onConnect}
            onConnectEnd={onConnectEnd}
            edgesReconnectable
            onReconnectStart={onReconnectStart}
            onReconnect={onReconnect}
            onReconnectEnd={onReconnectEnd}
            isValidConnection={isValidConnection}
            onPaneClick={() => {
              select([]);
              setSelectedEdges([]);
            }}
            deleteKeyCode={null}
            multiSelectionKeyCode={['Shift', 'Meta', 'Control']}
            selectionKeyCode="Shift"
            fitView
            fitViewOptions={{ padding: 0.2, maxZoom: 1.1 }}
            minZoom={0.15}
            proOptions={{ hideAttribution: true }}
            aria-label="Workflow canvas"
          >
            <Background gap={20} />
            <Controls />
            <MiniMap pannable zoomable ariaLabel="Overview" className="editor-minimap" nodeBorderRadius={6} maskColor="rgb(120 130 150 / 14%)" />
            <Panel position="top-left" className="legend-panel">
              <Legend />
            </Panel>
            {graph.definition.nodes.length === 0 && (
              <Panel position="top-center" className="canvas-empty">
                <p><strong>An empty workflow.</strong> Drag nodes from the palette, or focus one and press Enter.</p>
                <p className="muted small">Start with an Input, a node that does the work, and an Output. Connect an output port (right) to an input port (left).</p>
              </Panel>
            )}
          </ReactFlow>
          {toast && (
            <div className={`editor-toast ${toast.tone}`} role={toast.tone === 'error' ? 'alert' : 'status'}>
              <span>{toast.text}</span>
              <button type="button" className="button subtle small" onClick={() => setToast(null)} aria-label="Dismiss">×</button>
            </div>
          )}
        </div>
        <aside className="editor-side" aria-label={panel === 'run' ? 'Run' : 'Inspector'}>
          {panel === 'run' ? (
            <RunPanel definition={graph.definition} workflowId={workflow.id} prepare={saveNow} resumeKey={workflow.id} onSteps={runSteps} onClose={closeRun} />
          ) : (
            <>
              {selectedNode ? (
                <Inspector
                  key={selectedNode.id}
                  graph={graph}
                  catalog={catalog}
                  node={selectedNode}
                  problems={problemMap.get(selectedNode.id) ?? []}
                  onSetInput={(k, v, coalesce) => apply((g) => setInput(g, selectedNode.id, k, v), coalesce)}
                  onConnect={(source, sourcePort, targetPort) => onConnect({ source, sourceHandle: `out:${sourcePort}`, target: selectedNode.id, targetHandle: `in:${targetPort}` })}
                  onSetFields={(fields) =>
                    apply(
                      (g) => (fields.outputType ? setOutputType(g, selectedNode.id, fields.outputType) : setNodeFields(g, selectedNode.id, fields)),
                      fields.outputType ? undefined : `fields:${selectedNode.id}:label`,
                    )}
                  onRename={(to) => {
                    apply((g) => renameNode(g, selectedNode.id, to));
                    select([to]);
                  }}
                  onSetMountVersion={(selector) => apply((g) => setMountVersion(g, selectedNode.id, selector))}
                  onDelete={() => apply((g) => deleteNodes(g, [selectedNode.id]))}
                  onSelect={focusNode}
                  upload={upload}
                />
              ) : (
                <div className="inspector inspector-empty">
                  <h2>{selected.length > 1 ? `${selected.length} nodes selected` : 'Nothing selected'}</h2>
                  <p className="muted small">
                    {selected.length > 1
                      ? 'Copy with Ctrl+C, paste with Ctrl+V, delete with Delete.'
                      : 'Select a node to edit its inputs. Shift-click or Shift-drag selects several.'}
                  </p>
                  {selected.length > 1 && <button type="button" className="button danger small" onClick={deleteSelection}>Delete {selected.length} nodes</button>}
                </div>
              )}
              <ProblemsList problems={liveProblems} onSelect={focusNode} />
            </>
          )}
        </aside>
      </div>
      {dialog === 'publish' && <PublishDialog workflow={workflow} onClose={() => setDialog(null)} onPublished={onPublished} />}
      {dialog === 'history' && (
        <HistoryPanel workflow={workflow} onChanged={(w) => setWorkflow(w)} onDeleted={() => navigate('/')} onClose={() => setDialog(null)} />
      )}
      {dialog === 'import' && importErrors && (
        <div className="dialog-backdrop" onClick={() => setDialog(null)}>
          <div className="dialog" role="dialog" aria-modal="true" aria-labelledby="import-title" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.key === 'Escape' && setDialog(null)}>
            <h2 id="import-title">This file is not a workflow</h2>
            <p className="muted">Nothing was changed. What is wrong:</p>
            <ul className="import-errors">{importErrors.map((m, i) => <li key={i}>{m}</li>)}</ul>
            <div className="actions">
              <button type="button" className="button primary" autoFocus onClick={() => setDialog(null)}>Close</button>
            </div>
          </div>
        </div>
      )}
    </div>
  );
}

function SaveIndicator({ save, onRetry }: { save: SaveState; onRetry(): void }) {
  if (save.kind === 'error') {
    return (
      <button type="button" className="save-state error" onClick={onRetry} title="Save again" data-testid="save-state">
        Not saved · Retry
      </button>
    );
  }
  const text = save.kind === 'saved' ? 'Saved' : save.kind === 'saving' ? 'Saving…' : 'Unsaved changes';
  return <span className={`save-state ${save.kind}`} role="status" data-testid="save-state">{text}</span>;
}

function ProblemsList({ problems, onSelect }: { problems: readonly NodeProblem[]; onSelect(id: string): void }) {
  return (
    <section className="problems-panel" aria-labelledby="problems-title">
      <h2 id="problems-title">
        Problems <span className={`badge ${problems.length > 0 ? 'failed' : 'completed'}`}>{problems.length}</span>
      </h2>
      {problems.length === 0 ? (
        <p className="muted small">None: the draft can be published.</p>
      ) : (
        <ul>
          {problems.map((p, i) => (
            <li key={i}>
              {p.nodeId ? (
                <button type="button" className="problem-item" onClick={() => onSelect(p.nodeId!)}>
                  <span className="mono">{p.nodeId}{p.field ? `.${p.field}` : ''}</span>
                  <span>{p.message}</span>
                </button>
              ) : (
                <div className="problem-item"><span>{p.message}</span></div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Legend() {
  return (
    <details className="legend">
      <summary>Port types</summary>
      <ul>
        {CONNECTOR_IDS.map((c) => <li key={c} className={connectorClass(c)}><span className="swatch" />{c}</li>)}
        <li className={connectorClass('CUSTOM:x')}><span className="swatch" />CUSTOM</li>
        <li className="c-any"><span className="swatch hollow" />optional: dimmer name</li>
        <li className="c-any"><span className="swatch ring" />list: [ ] and double ring</li>
      </ul>
    </details>
  );
}
