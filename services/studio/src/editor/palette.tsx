import { useEffect, useMemo, useState, type DragEvent, type KeyboardEvent } from 'react';
import type { EditorWorkflowSummary, NodeSpec } from '../../../contract';
import { client, errorText } from '../lib/api';
import type { NewNode } from './model';

/** The drag payload's media type: a JSON NewNode. */
export const NODE_DRAG_TYPE = 'application/x-studio-node';

export interface PaletteProps {
  specs: NodeSpec[];
  loading: boolean;
  error: string | null;
  /** This workflow's id, left out of the Workflows tab (a workflow cannot mount itself). */
  workflowId: string;
  onAdd(node: NewNode): void;
}

interface Entry {
  key: string;
  title: string;
  description: string;
  category: string;
  /** Example input values (`NodeSpec.example`), shown under the description. */
  example?: string;
  node: NewNode;
}

const INTERFACE_ENTRIES: Entry[] = [
  { key: 'input', title: 'Input', description: 'A value callers give when they run the workflow.', category: 'Interface', node: { uses: 'input', outputType: 'TEXT' } },
  { key: 'const', title: 'Const', description: 'A fixed value, set here in the editor.', category: 'Interface', node: { uses: 'const', outputType: 'TEXT' } },
  { key: 'output', title: 'Output', description: 'A result of the workflow.', category: 'Interface', node: { uses: 'output' } },
];

function matches(entry: Entry, q: string): boolean {
  if (q === '') return true;
  const hay = `${entry.key} ${entry.title} ${entry.description} ${entry.category}`.toLowerCase();
  return q.toLowerCase().split(/\s+/).every((word) => hay.includes(word));
}

/** The node palette: platform nodes by category and the organization's published workflows; drag onto the canvas or press Enter. */
export function Palette({ specs, loading, error, workflowId, onAdd }: PaletteProps) {
  const [tab, setTab] = useState<'nodes' | 'workflows'>('nodes');
  const [q, setQ] = useState('');
  const entries = useMemo<Entry[]>(
    () => [
      ...INTERFACE_ENTRIES,
      ...specs.map((s) => ({ key: s.id, title: s.title, description: s.description, category: s.category, ...(s.example ? { example: exampleText(s.example) } : {}), node: { uses: s.id } })),
    ],
    [specs],
  );
  const groups = useMemo(() => {
    const map = new Map<string, Entry[]>();
    for (const e of entries) if (matches(e, q)) map.set(e.category, [...(map.get(e.category) ?? []), e]);
    return [...map.entries()];
  }, [entries, q]);

  return (
    <aside className="palette" aria-label="Node palette">
      <div className="palette-tabs" role="tablist" aria-label="Palette">
        <button type="button" role="tab" aria-selected={tab === 'nodes'} className={tab === 'nodes' ? 'active' : ''} onClick={() => setTab('nodes')}>Nodes</button>
        <button type="button" role="tab" aria-selected={tab === 'workflows'} className={tab === 'workflows' ? 'active' : ''} onClick={() => setTab('workflows')}>Workflows</button>
      </div>
      <label className="palette-search">
        <span className="visually-hidden">Search {tab}</span>
        <input type="search" placeholder={tab === 'nodes' ? 'Search nodes…' : 'Search workflows…'} value={q} onChange={(e) => setQ(e.target.value)} />
      </label>
      <div className="palette-list" role="tabpanel">
        {tab === 'nodes' ? (
          <>
            {error && <p className="error-text small" role="alert">Could not load the node catalog: {error}</p>}
            {loading && <p className="muted small">Loading nodes…</p>}
            {groups.length === 0 && !loading && <p className="muted small">No node matches “{q}”.</p>}
            {groups.map(([category, list]) => (
              <section key={category} className="palette-group" aria-label={category}>
                <h3>{category}</h3>
                <ul>
                  {list.map((e) => <PaletteItem key={e.key} entry={e} onAdd={onAdd} />)}
                </ul>
              </section>
            ))}
          </>
        ) : (
          <WorkflowsTab q={q} workflowId={workflowId} onAdd={onAdd} />
        )}
      </div>
      <p className="palette-hint muted small">Drag onto the canvas, or focus an item and press Enter.</p>
    </aside>
  );
}

function PaletteItem({ entry, onAdd }: { entry: Entry; onAdd(node: NewNode): void }) {
  const onDragStart = (e: DragEvent) => {
    e.dataTransfer.setData(NODE_DRAG_TYPE, JSON.stringify(entry.node));
    e.dataTransfer.effectAllowed = 'copy';
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      onAdd(entry.node);
    }
  };
  return (
    <li>
      <div
        className="palette-item"
        role="button"
        tabIndex={0}
        draggable
        data-testid={`palette-${entry.key}`}
        aria-label={`Add ${entry.title}`}
        aria-description={entry.description}
        onDragStart={onDragStart}
        onKeyDown={onKeyDown}
        onDoubleClick={() => onAdd(entry.node)}
        title={`${entry.key}: ${entry.description}${entry.example ? `\nExample: ${entry.example}` : ''}`}
      >
        <span className="palette-title">{entry.title}</span>
        <span className="palette-desc muted">{entry.description}</span>
        {entry.example && <span className="palette-example muted small">e.g. {entry.example}</span>}
      </div>
    </li>
  );
}

/** `prompt: "a fox", num_images: 2`, cut to one short line. */
function exampleText(example: Record<string, unknown>): string {
  const text = Object.entries(example).map(([name, value]) => `${name}: ${JSON.stringify(value)}`).join(', ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function majorOf(version: string): string {
  return version.split('.')[0] ?? version;
}

function WorkflowsTab({ q, workflowId, onAdd }: { q: string; workflowId: string; onAdd(node: NewNode): void }) {
  const [list, setList] = useState<EditorWorkflowSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    client.routes['editor.workflows.list']({}).then(
      (answer) => live && setList(answer.workflows),
      (err: unknown) => live && setError(errorText(err)),
    );
    return () => {
      live = false;
    };
  }, []);
  if (error) return <p className="error-text small" role="alert">{error}</p>;
  if (!list) return <p className="muted small">Loading workflows…</p>;
  const published = list.filter((w) => w.id !== workflowId && w.address && w.latest);
  const shown = published.filter((w) => `${w.name} ${w.address}`.toLowerCase().includes(q.toLowerCase()));
  if (published.length === 0) return <p className="muted small">No published workflows yet. Publish a workflow to mount it here as a node.</p>;
  if (shown.length === 0) return <p className="muted small">No workflow matches “{q}”.</p>;
  return (
    <ul>
      {shown.map((w) => {
        const latest = w.latest!.version;
        const entry: Entry = {
          key: `${w.address}@${majorOf(latest)}`,
          title: w.name,
          description: `${w.address} · latest ${latest} (mounted as @${majorOf(latest)}, the newest ${majorOf(latest)}.x)`,
          category: 'Workflows',
          node: { uses: `${w.address}@${majorOf(latest)}`, label: w.name },
        };
        return <PaletteItem key={w.id} entry={entry} onAdd={onAdd} />;
      })}
    </ul>
  );
}
