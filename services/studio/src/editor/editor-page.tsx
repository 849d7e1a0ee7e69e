import {
  Background, Controls, MiniMap, Panel, ReactFlow, ReactFlowProvider, useReactFlow,
  type EdgeChange, type NodeChange as FlowNodeChange,
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
import { initialGraph, readLocalDraft } from './drafts';
import { useDraftSaving } from './draft-saving';
import { useConnections } from './editor-connections';
import { useEditorKeys } from './editor-keys';
import { ImportErrorsDialog, Legend, ProblemsList, SaveIndicator, SelectionSummary } from './editor-panels';
import './editor.css';
import { toFlow } from './flow';
import { Inspector } from './inspector';
import { downloadText, exportWorkflow, importWorkflow, type Format } from './io';
import {
  addNode, deleteNodes, disconnect, moveNodes,
  renameNode, setInput, setMountVersion, setNodeFields, setOutputType, type Graph, type NewNode, type Position,
} from './model';
import { mapProblems, problemsByNode, type NodeProblem } from './problems';
import { nodeTypes } from './node-card';
import { NODE_DRAG_TYPE, Palette } from './palette';
import { createEditorStore, type EditorState } from './store';
import type { StoreApi } from 'zustand/vanilla';

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
  const canUndo = useStore(store, (s) => s.past.length > 0);
  const canRedo = useStore(store, (s) => s.future.length > 0);
  const { catalog, specs, loading: catalogLoading, error: catalogError } = useCatalog(graph.definition);

  // The server's problems with the last saved definition (null when its answer had none to give).
  const [serverProblems, setServerProblems] = useState<NodeProblem[] | null>(() =>
    Array.isArray(initial.problems) ? mapProblems(initial.draft ?? { version: 2, nodes: [] }, initial.problems) : null,
  );
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
  const { save, doSave, saveNow } = useDraftSaving({
    store,
    workflowId: initial.id,
    startUnsaved: start.unsaved,
    onSaved: (answer, saved) => {
      setWorkflow(answer);
      setServerProblems(Array.isArray(answer.problems) ? mapProblems(saved, answer.problems) : null);
    },
    onRefused: (refused, definition) => setServerProblems(mapProblems(definition, refused)),
  });

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

  const { isValidConnection, onConnect, onReconnectStart, onReconnect, onReconnectEnd, onConnectEnd } = useConnections({ store, catalog, apply, showToast });

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

  useEditorKeys({ store, apply, select, deleteSelection, showToast, clearEdgeSelection: () => setSelectedEdges([]) });

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
  // React Flow keeps a node hidden until it is given back its measured size, so the nodes are
  // rebuilt whenever a measurement arrives, even when nothing else changed.
  const [measuredVersion, forceRender] = useState(0);
  const shown = useMemo(() => {
    const g: Graph = Object.keys(dragPos).length > 0 ? moveNodes(graph, dragPos) : graph;
    const f = toFlow(g, catalog, { steps, problems: problemMap, selected, editable: true });
    const edgeSel = new Set(selectedEdges);
    return {
      nodes: f.nodes.map((n) => ({ ...n, measured: measured.current.get(n.id) })),
      edges: f.edges.map((e) => ({ ...e, selected: edgeSel.has(e.id) })),
    };
  }, [graph, dragPos, catalog, steps, problemMap, selected, selectedEdges, measuredVersion]);

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
    downloadText(`${base}.${format === 'json' ? 'json' : 'yaml'}`, exportWorkflow(store.getState().graph.definition, format), format === 'json' ? 'application/json' : 'application/yaml');
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
                <SelectionSummary count={selected.length} onDelete={deleteSelection} />
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
      {dialog === 'import' && importErrors && <ImportErrorsDialog errors={importErrors} onClose={() => setDialog(null)} />}
    </div>
  );
}
