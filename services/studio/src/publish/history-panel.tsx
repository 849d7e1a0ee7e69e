import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import type { EditorWorkflow, GraphNode, WorkflowVersionDetail, WorkflowVersionEntry } from '../../../contract';
import { GraphView } from '../editor/graph-view';
import { client, errorText } from '../lib/api';
import { useSession } from '../lib/session';
import { When } from '../workflows/when';
import { DialogActions, Modal, useDialogAction } from './modal';
import { diffGraph, diffWorkflows, rollbackOutcome, type NodeField } from './versioning';
import './publish.css';

export interface HistoryPanelProps {
  workflow: EditorWorkflow;
  /** After a rollback (latest moved) or another change, with the workflow's new state. */
  onChanged(workflow: EditorWorkflow): void;
  /** After the workflow was deleted. */
  onDeleted(): void;
  onClose(): void;
}

type Versions = { status: 'loading' } | { status: 'failed'; message: string } | { status: 'ready'; versions: WorkflowVersionEntry[] };
type VersionGraph = Pick<WorkflowVersionDetail, 'definition' | 'layout'>;
type Detail = { status: 'loading' } | { status: 'failed'; message: string } | { status: 'ready'; detail: VersionGraph };

/**
 * One published version's definition and layout from the editor's route; where that route fails
 * (a server without it yet), the definition alone from the public `workflows.get` by UUID and
 * exact version, drawn with automatic layout. The editor route's error is the one shown.
 */
async function fetchVersion(id: string, version: string): Promise<VersionGraph> {
  try {
    return await client.routes['editor.workflows.version']({ id, version });
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 400 || status === 401 || status === 403) throw err;
    try {
      const published = await client.ops['workflows.get']({ id, version });
      if (published.version !== version) throw err;
      return { definition: published.workflow, layout: null };
    } catch {
      throw err;
    }
  }
}
type Pane = { kind: 'none' } | { kind: 'view'; version: string } | { kind: 'diff'; a: string; b: string };

/** Published versions, fetched once each (they never change). */
function useVersionDetails(id: string) {
  const [details, setDetails] = useState<Record<string, Detail>>({});
  const asked = useRef(new Set<string>());
  const need = useCallback(
    (version: string) => {
      if (asked.current.has(version)) return;
      asked.current.add(version);
      setDetails((d) => ({ ...d, [version]: { status: 'loading' } }));
      fetchVersion(id, version).then(
        (detail) => setDetails((d) => ({ ...d, [version]: { status: 'ready', detail } })),
        (err: unknown) => {
          asked.current.delete(version);
          setDetails((d) => ({ ...d, [version]: { status: 'failed', message: errorText(err) } }));
        },
      );
    },
    [id],
  );
  return { details, need };
}

/** Version history: view any version, diff two, roll latest back (or forward), delete the workflow. */
export function HistoryPanel({ workflow, onChanged, onDeleted, onClose }: HistoryPanelProps) {
  const [versions, setVersions] = useState<Versions>({ status: 'loading' });
  const [pane, setPane] = useState<Pane>({ kind: 'none' });
  const [rollbackTo, setRollbackTo] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);
  const { details, need } = useVersionDetails(workflow.id);
  const address = workflow.address ?? workflow.id;

  const fetchVersions = useCallback(async () => {
    try {
      const { versions } = await client.routes['editor.workflows.versions']({ id: workflow.id });
      setVersions({ status: 'ready', versions });
    } catch (err) {
      setVersions({ status: 'failed', message: errorText(err) });
    }
  }, [workflow.id]);

  useEffect(() => {
    void fetchVersions();
  }, [fetchVersions, workflow.latest?.version]);

  const list = versions.status === 'ready' ? versions.versions : [];
  const [diffA, setDiffA] = useState('');
  const [diffB, setDiffB] = useState('');
  useEffect(() => {
    if (list.length >= 2 && !diffA && !diffB) {
      setDiffA(list[1]!.version);
      setDiffB(list[0]!.version);
    }
  }, [list, diffA, diffB]);

  const showView = (version: string) => {
    need(version);
    setPane({ kind: 'view', version });
  };
  const showDiff = () => {
    if (!diffA || !diffB) return;
    need(diffA);
    need(diffB);
    setPane({ kind: 'diff', a: diffA, b: diffB });
  };
  const overlay = rollbackTo !== null || deleting;

  return (
    <>
      <Modal title={`Version history · ${workflow.name}`} onClose={onClose} dismiss={overlay ? null : onClose} className="history-panel">
        <p className="muted history-address">
          {workflow.address ? (
            <>
              Address <code>{workflow.address}</code>
              {workflow.latest && (
                <>
                  {' · '}
                  <code>@latest</code> → <span className="mono">{workflow.latest.version}</span>
                </>
              )}
            </>
          ) : (
            'Not published yet: publishing claims an address and creates version 1.0.0.'
          )}
        </p>

        {versions.status === 'loading' && (
          <p className="muted" role="status">
            Loading versions…
          </p>
        )}
        {versions.status === 'failed' && (
          <p className="error-text" role="alert">
            Could not load the versions: {versions.message}
          </p>
        )}
        {versions.status === 'ready' && list.length === 0 && <div className="empty">No version published yet.</div>}
        {list.length > 0 && (
          <div className="history-table-wrap">
            <table className="table history-table">
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col" className="num hide-narrow">Seq.</th>
                  <th scope="col">Published</th>
                  <th scope="col" className="hide-narrow">By</th>
                  <th scope="col">Note</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((v) => (
                  <tr key={v.version} className={pane.kind === 'view' && pane.version === v.version ? 'selected' : undefined}>
                    <td>
                      <span className="mono history-version">{v.version}</span>
                      {v.latest && <span className="badge ok history-latest">latest</span>}
                    </td>
                    <td className="num hide-narrow">{v.sequence}</td>
                    <td>
                      <When iso={v.createdAt} />
                    </td>
                    <td className="hide-narrow">{v.publishedBy ? v.publishedBy.name : <span className="muted">deleted account</span>}</td>
                    <td className="history-note">{v.note ? v.note : <span className="muted">—</span>}</td>
                    <td className="history-actions">
                      <button type="button" className="button small" onClick={() => showView(v.version)} aria-label={`View ${v.version}`}>
                        View
                      </button>
                      <button
                        type="button"
                        className="button small"
                        onClick={() => setRollbackTo(v.version)}
                        disabled={v.latest}
                        title={v.latest ? '@latest already points here' : undefined}
                        aria-label={`Point latest at ${v.version}`}
                      >
                        {v.latest ? 'Current' : isOlder(list, v) ? 'Roll back' : 'Make latest'}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}

        {list.length >= 2 && (
          <div className="row history-diff-pick">
            <span className="history-diff-label">Compare</span>
            <VersionPick label="From version" versions={list} value={diffA} onChange={setDiffA} />
            <span aria-hidden>→</span>
            <VersionPick label="To version" versions={list} value={diffB} onChange={setDiffB} />
            <button type="button" className="button small" onClick={showDiff} disabled={diffA === diffB}>
              Show changes
            </button>
          </div>
        )}

        {pane.kind === 'view' && <VersionView detail={details[pane.version]} version={pane.version} onClose={() => setPane({ kind: 'none' })} />}
        {pane.kind === 'diff' && <DiffView a={details[pane.a]} b={details[pane.b]} from={pane.a} to={pane.b} onClose={() => setPane({ kind: 'none' })} />}

        <div className="history-footer">
          <DeleteHint onDelete={() => setDeleting(true)} />
          <span className="spacer" />
          <button type="button" className="button" onClick={onClose}>
            Close
          </button>
        </div>
      </Modal>

      {rollbackTo !== null && (
        <RollbackDialog
          workflow={workflow}
          address={address}
          versions={list}
          target={rollbackTo}
          onClose={() => setRollbackTo(null)}
          onDone={(updated) => {
            setRollbackTo(null);
            onChanged(updated);
            void fetchVersions();
          }}
        />
      )}
      {deleting && <DeleteDialog workflow={workflow} onClose={() => setDeleting(false)} onDeleted={onDeleted} />}
    </>
  );
}

/** Whether a version was published before the one latest names (so moving there is a rollback). */
function isOlder(list: WorkflowVersionEntry[], v: WorkflowVersionEntry): boolean {
  const current = list.find((x) => x.latest);
  return !current || v.sequence < current.sequence;
}

function DeleteHint({ onDelete }: { onDelete(): void }) {
  const role = useSession((s) => (s.state.status === 'signed-in' ? s.state.session.organization.role : undefined));
  return (
    <div className="row">
      <button type="button" className="button danger" onClick={onDelete}>
        Delete workflow…
      </button>
      {role === 'member' && <span className="muted small">Only owners and admins can delete workflows.</span>}
    </div>
  );
}

/** Brings a pane that opened below the table into view. */
function useRevealed<T extends HTMLElement>(key: string) {
  const ref = useRef<T>(null);
  useEffect(() => {
    ref.current?.scrollIntoView?.({ block: 'nearest', behavior: 'smooth' });
  }, [key]);
  return ref;
}

/** A pane's heading row, with the button that hides the pane. */
function PaneHeading({ onClose, children }: { onClose(): void; children: ReactNode }) {
  return (
    <div className="row">
      <h3>{children}</h3>
      <span className="spacer" />
      <button type="button" className="button small subtle" onClick={onClose}>
        Hide
      </button>
    </div>
  );
}

function VersionView({ detail, version, onClose }: { detail: Detail | undefined; version: string; onClose(): void }) {
  const ref = useRevealed<HTMLElement>(`${version}:${detail?.status}`);
  return (
    <section className="history-pane" aria-label={`Version ${version}`} ref={ref}>
      <PaneHeading onClose={onClose}>
        Version <span className="mono">{version}</span> <span className="badge">read-only</span>
      </PaneHeading>
      {(!detail || detail.status === 'loading') && <p className="muted" role="status">Loading {version}…</p>}
      {detail?.status === 'failed' && <p className="error-text" role="alert">{detail.message}</p>}
      {detail?.status === 'ready' && (
        <>
          <GraphView definition={detail.detail.definition} layout={detail.detail.layout} height={340} />
          <details className="history-json">
            <summary>Definition JSON</summary>
            <pre>{JSON.stringify(detail.detail.definition, null, 2)}</pre>
          </details>
        </>
      )}
    </section>
  );
}

function DiffView({ a, b, from, to, onClose }: { a: Detail | undefined; b: Detail | undefined; from: string; to: string; onClose(): void }) {
  const ready = useMemo(() => (a?.status === 'ready' && b?.status === 'ready' ? { a: a.detail, b: b.detail } : null), [a, b]);
  const diff = useMemo(() => (ready ? diffWorkflows(ready.a.definition, ready.b.definition) : null), [ready]);
  const graph = useMemo(() => (ready && diff ? diffGraph(ready.a, ready.b, diff) : null), [ready, diff]);
  const failed = [a, b].find((d) => d?.status === 'failed') as { status: 'failed'; message: string } | undefined;
  const usesOf = (id: string, side: VersionGraph | undefined) => side?.definition.nodes.find((n) => n.id === id)?.uses;
  const ref = useRevealed<HTMLElement>(`${from}:${to}:${Boolean(diff)}`);
  return (
    <section className="history-pane" aria-label={`Changes from ${from} to ${to}`} ref={ref}>
      <PaneHeading onClose={onClose}>
        Changes from <span className="mono">{from}</span> to <span className="mono">{to}</span>
      </PaneHeading>
      {failed && <p className="error-text" role="alert">{failed.message}</p>}
      {!failed && !diff && <p className="muted" role="status">Loading both versions…</p>}
      {diff && graph && ready && (
        <>
          {diff.added.length + diff.removed.length + diff.changed.length === 0 ? (
            <p className="muted">The two versions have the same nodes, with the same settings.</p>
          ) : (
            <ul className="diff-list">
              {diff.added.map((id) => (
                <li key={`a-${id}`} className="diff-added">
                  <span className="badge ok">added</span> <code>{id}</code> <span className="muted">{usesOf(id, ready.b)}</span>
                </li>
              ))}
              {diff.removed.map((id) => (
                <li key={`r-${id}`} className="diff-removed">
                  <span className="badge error">removed</span> <code>{id}</code> <span className="muted">{usesOf(id, ready.a)}</span>
                </li>
              ))}
              {diff.changed.map((c) => (
                <li key={`c-${c.id}`} className="diff-changed">
                  <span className="badge warn">changed</span> <code>{c.id}</code> <span className="muted">{c.fields.join(', ')}</span>
                  <ChangeDetail before={ready.a.definition.nodes.find((n) => n.id === c.id)} after={ready.b.definition.nodes.find((n) => n.id === c.id)} fields={c.fields} />
                </li>
              ))}
            </ul>
          )}
          <GraphView definition={graph.definition} layout={graph.layout} changes={diff.changes} height={340} />
        </>
      )}
    </section>
  );
}

const short = (value: unknown) => {
  const text = value === undefined ? 'none' : typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
};

/** What changed in one node: old → new for uses, label and outputType; which inputs changed. */
function ChangeDetail({ before, after, fields }: { before: GraphNode | undefined; after: GraphNode | undefined; fields: NodeField[] }) {
  if (!before || !after) return null;
  const parts: string[] = [];
  for (const field of fields) {
    if (field === 'inputs') {
      const a = before.inputs ?? {};
      const b = after.inputs ?? {};
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
      parts.push(`inputs ${keys.map((k) => `${k}: ${short(a[k])} → ${short(b[k])}`).join('; ')}`);
    } else {
      parts.push(`${field}: ${short(before[field])} → ${short(after[field])}`);
    }
  }
  return <div className="diff-detail mono">{parts.join(' · ')}</div>;
}

function RollbackDialog({
  workflow,
  address,
  versions,
  target,
  onClose,
  onDone,
}: {
  workflow: EditorWorkflow;
  address: string;
  versions: WorkflowVersionEntry[];
  target: string;
  onClose(): void;
  onDone(updated: EditorWorkflow): void;
}) {
  const { busy, problem, run } = useDialogAction();
  const outcome = rollbackOutcome(versions, target);
  const currentSeq = versions.find((v) => v.latest)?.sequence ?? 0;
  const back = (versions.find((v) => v.version === target)?.sequence ?? 0) < currentSeq;
  const onConfirm = () => run(async () => onDone(await client.routes['editor.workflows.latest']({ id: workflow.id, version: target })));
  const show = (v: string | null) => (v ? <span className="mono">{v}</span> : <span className="error-text">not found (404)</span>);
  return (
    <Modal title={back ? `Roll @latest back to ${target}?` : `Move @latest forward to ${target}?`} onClose={onClose} dismiss={busy ? null : onClose} alert className="rollback-dialog">
      <p>Callers that use these refs will run a different version as soon as you confirm:</p>
      <table className="table rollback-table">
        <thead>
          <tr>
            <th scope="col">Ref</th>
            <th scope="col">Now</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>
              <code>{address}@latest</code>
              <div className="muted small">also a bare <code>{address}</code></div>
            </td>
            <td>{show(outcome.latestBefore)}</td>
            <td className={outcome.latestBefore !== outcome.latestAfter ? 'rollback-moved' : undefined}>{show(outcome.latestAfter)}</td>
          </tr>
          {outcome.majors.map((m) => (
            <tr key={m.major}>
              <td>
                <code>
                  {address}@{m.major}
                </code>
              </td>
              <td>{show(m.before)}</td>
              <td className={m.before !== m.after ? 'rollback-moved' : undefined}>{show(m.after)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {outcome.majors.some((m) => m.before !== null && m.after === null) && (
        <p className="rollback-404">
          {outcome.majors
            .filter((m) => m.before !== null && m.after === null)
            .map((m) => `@${m.major}`)
            .join(', ')}{' '}
          will answer 404 until <code>@latest</code> points at a version of that major again: callers pinned to it will fail.
        </p>
      )}
      <p className="muted small">
        A bare major resolves to the highest version of that major published no later than the one <code>@latest</code> names, so it follows{' '}
        <code>@latest</code> back and forward. Exact refs such as <code>{address}@{target}</code> always resolve. Nothing is deleted; you can move <code>@latest</code>{' '}
        {back ? 'forward' : 'back'} again, and the next publish still continues from the highest version ever published.
      </p>
      <DialogActions problem={problem} busy={busy} onCancel={onClose} label={`Point @latest at ${target}`} busyLabel="Moving…" onConfirm={() => void onConfirm()} focus="action" />
    </Modal>
  );
}

function DeleteDialog({ workflow, onClose, onDeleted }: { workflow: EditorWorkflow; onClose(): void; onDeleted(): void }) {
  const [typed, setTyped] = useState('');
  const { busy, problem, run } = useDialogAction();
  const matches = typed.trim() === workflow.name.trim();
  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    if (!matches) return;
    await run(async () => {
      await client.routes['editor.workflows.delete']({ id: workflow.id });
      onDeleted();
    });
  };
  return (
    <Modal title={`Delete “${workflow.name}”?`} onClose={onClose} dismiss={busy ? null : onClose} alert>
      <form className="stack" onSubmit={(e) => void onSubmit(e)}>
        {workflow.address ? (
          <div className="delete-warning">
            <p>
              The address <code>{workflow.address}</code> is <strong>retired forever</strong>: no workflow of this organization can ever claim it again.
            </p>
            <p>
              Every ref to it — <code>{workflow.address}@latest</code>, bare majors, exact versions and the workflow’s UUID — stops resolving at once, so the
              code, CLI calls and workflows that mount it will fail. Its recipe assets are withdrawn. Past runs keep their records.
            </p>
          </div>
        ) : (
          <p>The workflow and its draft are deleted. It was never published, so no address is retired and no ref breaks.</p>
        )}
        <label className="field">
          <span>
            Type <strong>{workflow.name}</strong> to confirm
          </span>
          <input type="text" value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" spellCheck={false} data-autofocus />
        </label>
        <DialogActions problem={problem} busy={busy} onCancel={onClose} label="Delete forever" busyLabel="Deleting…" tone="danger" disabled={!matches} />
      </form>
    </Modal>
  );
}

/** One side of a comparison: a select of the published versions. */
function VersionPick({ label, versions, value, onChange }: { label: string; versions: readonly { version: string }[]; value: string; onChange(version: string): void }) {
  return (
    <label>
      <span className="visually-hidden">{label}</span>
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        {versions.map((v) => (
          <option key={v.version} value={v.version}>
            {v.version}
          </option>
        ))}
      </select>
    </label>
  );
}
