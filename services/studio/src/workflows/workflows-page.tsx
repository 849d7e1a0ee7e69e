import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import type { EditorWorkflowSummary } from '../../../contract';
import { client, errorText } from '../lib/api';
import { DialogActions, Modal, useDialogAction } from '../publish/modal';
import { StarterList } from './starter-list';
import { When } from './when';
import { filterWorkflows } from './workflow-filter';
import { LoadFailed, Loading } from '../ui/load-states';
import './workflows.css';

type Load = { status: 'loading' } | { status: 'failed'; message: string } | { status: 'ready'; workflows: EditorWorkflowSummary[] };

/** `/`: the organization's workflows; search, create, open. */
export function WorkflowsPage() {
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [params, setParams] = useSearchParams();
  const query = params.get('q') ?? '';
  const [creating, setCreating] = useState(false);
  const navigate = useNavigate();

  const fetchList = useCallback(async () => {
    setLoad({ status: 'loading' });
    try {
      const { workflows } = await client.routes['editor.workflows.list']({});
      setLoad({ status: 'ready', workflows });
    } catch (err) {
      setLoad({ status: 'failed', message: errorText(err) });
    }
  }, []);

  useEffect(() => {
    document.title = 'Workflows · Studio';
    void fetchList();
  }, [fetchList]);

  const setQuery = (q: string) => {
    const next = new URLSearchParams(params);
    if (q) next.set('q', q);
    else next.delete('q');
    setParams(next, { replace: true });
  };

  const all = load.status === 'ready' ? load.workflows : [];
  const shown = filterWorkflows(all, query);

  return (
    <main className="page workflows-page">
      <div className="page-header">
        <h1>Workflows</h1>
        {load.status === 'ready' && all.length > 0 && (
          <label className="workflows-search">
            <span className="visually-hidden">Search workflows</span>
            <input type="search" placeholder="Search by name or address" value={query} onChange={(e) => setQuery(e.target.value)} />
          </label>
        )}
        <button type="button" className="button primary" onClick={() => setCreating(true)}>
          <span aria-hidden>+</span> New workflow
        </button>
      </div>

      {load.status === 'loading' && <Loading>Loading workflows…</Loading>}
      {load.status === 'failed' && <LoadFailed what="the workflows" message={load.message} onRetry={() => void fetchList()} />}
      {load.status === 'ready' && all.length === 0 && (
        <div className="empty workflows-empty">
          <div className="workflows-empty-mark" aria-hidden>◆</div>
          <h2>Build your first workflow</h2>
          <p>Chain nodes on a canvas — text, images, audio, video — run it with a spending cap, and publish it as a versioned address your code and the CLI can call.</p>
          <StarterList onCreated={(id) => navigate(`/workflows/${id}`)} />
          <button type="button" className="button primary" onClick={() => setCreating(true)}>
            Create a blank workflow
          </button>
        </div>
      )}
      {load.status === 'ready' && all.length > 0 && shown.length === 0 && (
        <div className="empty">
          <p>No workflow matches “{query}”.</p>
          <button type="button" className="button" onClick={() => setQuery('')}>
            Clear the search
          </button>
        </div>
      )}
      {shown.length > 0 && <WorkflowTable workflows={shown} onOpen={(id) => navigate(`/workflows/${id}`)} />}
      {load.status === 'ready' && all.length > 0 && (
        <p className="muted small workflows-count" aria-live="polite">
          {query ? `${shown.length} of ${all.length} workflows` : `${all.length} workflow${all.length === 1 ? '' : 's'}`}
        </p>
      )}

      {creating && <NewWorkflowDialog onClose={() => setCreating(false)} onCreated={(id) => navigate(`/workflows/${id}`)} />}
    </main>
  );
}

function WorkflowTable({ workflows, onOpen }: { workflows: EditorWorkflowSummary[]; onOpen(id: string): void }) {
  return (
    <table className="table workflows-table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Address</th>
          <th scope="col">Latest</th>
          <th scope="col" className="hide-narrow">Last published</th>
          <th scope="col" className="hide-narrow">Updated</th>
        </tr>
      </thead>
      <tbody>
        {workflows.map((w) => (
          <tr
            key={w.id}
            className="workflow-row"
            onClick={(e) => {
              // The name is a real link (keyboard, middle-click); the rest of the row opens it too.
              if ((e.target as HTMLElement).closest('a')) return;
              onOpen(w.id);
            }}
          >
            <td>
              <Link to={`/workflows/${w.id}`} className="workflow-name">
                {w.name}
              </Link>
              {w.draftPending && (
                <span className="badge pending workflow-draft" title="The draft has changes that are not published yet">
                  draft changes
                </span>
              )}
            </td>
            <td>{w.address ? <code className="workflow-address">{w.address}</code> : <span className="muted">unpublished</span>}</td>
            <td>{w.latest ? <span className="mono">{w.latest.version}</span> : <span className="muted">—</span>}</td>
            <td className="hide-narrow">
              <When iso={w.lastPublishedAt} empty={w.latest ? "—" : "never"} />
            </td>
            <td className="hide-narrow">
              <When iso={w.updatedAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Names a new workflow and creates it with an empty draft. */
export function NewWorkflowDialog({ onClose, onCreated }: { onClose(): void; onCreated(id: string): void }) {
  const [name, setName] = useState('');
  const { busy, problem, setProblem, run } = useDialogAction();

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    const trimmed = name.trim();
    if (!trimmed) {
      setProblem('Give the workflow a name.');
      return;
    }
    await run(async () => {
      const created = await client.routes['editor.workflows.create']({ name: trimmed, definition: { version: 2, nodes: [] } });
      onCreated(created.id);
    });
  };

  return (
    <Modal title="New workflow" onClose={onClose} dismiss={busy ? null : onClose}>
      <form className="stack" onSubmit={(e) => void onSubmit(e)} noValidate>
        <div className="field">
          <label className="field" htmlFor="new-workflow-name">
            <span>Name</span>
          </label>
          <input
            id="new-workflow-name"
            type="text"
            value={name}
            maxLength={200}
            autoFocus
            onChange={(e) => setName(e.target.value)}
            aria-invalid={problem ? true : undefined}
            aria-describedby="new-workflow-hint"
            placeholder="e.g. Product photo to narrated clip"
          />
          <span className="hint" id="new-workflow-hint">
            Shown in the studio; you can rename it any time. The address is chosen when you first publish.
          </span>
        </div>
        <DialogActions problem={problem} busy={busy} onCancel={onClose} label="Create and open" busyLabel="Creating…" />
      </form>
    </Modal>
  );
}
