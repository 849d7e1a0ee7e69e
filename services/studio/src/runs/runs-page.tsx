import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { RUN_STATUSES, type RunStatus, type RunSummary } from '../../../contract';
import { client, errorText } from '../lib/api';
import { formatMs, formatTime, formatUsd } from '../lib/format';
import { Loading } from '../ui/load-states';
import './runs.css';

const PAGE = 25;

/** `acme/flow@1.2.0` → address `acme/flow`, version `1.2.0`; null (an inline definition) → null. */
export function splitRef(ref: string | null | undefined): { address: string; version: string } | null {
  if (!ref) return null;
  const at = ref.lastIndexOf('@');
  return at > 0 ? { address: ref.slice(0, at), version: ref.slice(at + 1) } : { address: ref, version: '' };
}

/** How long a run took, or has taken so far. */
export function runDuration(run: Pick<RunSummary, 'createdAt' | 'finishedAt'>, now = Date.now()): number {
  return Math.max(0, (run.finishedAt ? Date.parse(run.finishedAt) : now) - Date.parse(run.createdAt));
}

/** The name an editor draft run is listed under (`Speak and draw · draft`); null unless the run is one. */
export function draftRunName(run: Pick<RunSummary, 'workflowRef' | 'workflowName'>): string | null {
  return run.workflowRef === null && run.workflowName !== null ? `${run.workflowName} · draft` : null;
}

/** A typed workflow filter as the listing takes it: `org/workflow` (a version after `@` is dropped) or a workflow id, or why not. */
export function workflowFilter(text: string): { ok: true; value: string } | { ok: false; message: string } {
  const value = text.trim().replace(/@.*$/, '');
  if (value === '') return { ok: true, value: '' };
  if (!/^[^\s/]+\/[^\s/]+$/.test(value) && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) {
    return { ok: false, message: 'Give a workflow address (org/workflow) or a workflow id.' };
  }
  return { ok: true, value };
}

type Load = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; runs: RunSummary[]; nextCursor: string | null };

/** `/runs`: the organization's run history, newest first, filtered by status and workflow. */
export function RunsPage() {
  const [params, setParams] = useSearchParams();
  const status = (RUN_STATUSES as readonly string[]).includes(params.get('status') ?? '') ? (params.get('status') as RunStatus) : undefined;
  const workflow = params.get('workflow')?.trim() || undefined;
  // A batch's or a schedule's runs (linked from their pages).
  const batch = params.get('batch')?.trim() || undefined;
  const schedule = params.get('schedule')?.trim() || undefined;
  const origin = { ...(batch ? { batch } : {}), ...(schedule ? { schedule } : {}) };
  const [workflowText, setWorkflowText] = useState(workflow ?? '');
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [filterError, setFilterError] = useState<string | null>(null);
  const [more, setMore] = useState<{ loading: boolean; error: string | null }>({ loading: false, error: null });

  useEffect(() => {
    document.title = 'Runs · Studio';
  }, []);

  useEffect(() => {
    setWorkflowText(workflow ?? '');
    let live = true;
    setLoad({ status: 'loading' });
    client.routes['runs.list']({ limit: PAGE, ...(status ? { status } : {}), ...(workflow ? { workflow } : {}), ...origin }).then(
      (page) => live && setLoad({ status: 'ready', runs: page.runs, nextCursor: page.nextCursor }),
      (err: unknown) => live && setLoad({ status: 'error', message: errorText(err) }),
    );
    return () => {
      live = false;
    };
  }, [status, workflow, batch, schedule]);

  const setFilter = (name: 'status' | 'workflow', value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };

  const loadMore = async () => {
    if (load.status !== 'ready' || !load.nextCursor) return;
    setMore({ loading: true, error: null });
    try {
      const page = await client.routes['runs.list']({ limit: PAGE, cursor: load.nextCursor, ...(status ? { status } : {}), ...(workflow ? { workflow } : {}), ...origin });
      setLoad({ status: 'ready', runs: [...load.runs, ...page.runs], nextCursor: page.nextCursor });
      setMore({ loading: false, error: null });
    } catch (err) {
      setMore({ loading: false, error: errorText(err) });
    }
  };

  const filtered = status !== undefined || workflow !== undefined || batch !== undefined || schedule !== undefined;

  return (
    <main className="page">
      <div className="page-header">
        <h1>Runs</h1>
        {batch && (
          <span className="muted">
            of batch <Link to={`/batches/${batch}`}>{batch.slice(0, 8)}</Link>
          </span>
        )}
        {schedule && (
          <span className="muted">
            of schedule <Link to={`/schedules/${schedule}`}>{schedule.slice(0, 8)}</Link>
          </span>
        )}
      </div>
      <form
        className="runs-filters"
        role="search"
        aria-label="Filter runs"
        onSubmit={(e) => {
          e.preventDefault();
          const filter = workflowFilter(workflowText);
          setFilterError(filter.ok ? null : filter.message);
          if (filter.ok) setFilter('workflow', filter.value);
        }}
      >
        <label className="field">
          <span>Status</span>
          <select value={status ?? ''} onChange={(e) => setFilter('status', e.target.value)}>
            <option value="">Any status</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="field grow">
          <span>Workflow</span>
          <input
            type="search"
            placeholder="org/workflow"
            value={workflowText}
            onChange={(e) => {
              setWorkflowText(e.target.value);
              setFilterError(null);
            }}
            spellCheck={false}
            autoCapitalize="off"
            aria-invalid={filterError !== null}
            aria-describedby={filterError ? 'runs-workflow-error' : undefined}
          />
          {filterError && (
            <span id="runs-workflow-error" className="error-text small">
              {filterError}
            </span>
          )}
        </label>
        <button type="submit" className="button">
          Filter
        </button>
        {filtered && (
          <button
            type="button"
            className="button subtle"
            onClick={() => {
              setFilterError(null);
              setParams(new URLSearchParams(), { replace: true });
            }}
          >
            Clear
          </button>
        )}
      </form>

      {load.status === 'loading' && <Loading>Loading runs…</Loading>}
      {load.status === 'error' && (
        <p className="error-text" role="alert">
          {load.message}
        </p>
      )}
      {load.status === 'ready' && load.runs.length === 0 && (
        <div className="empty">
          {filtered ? (
            <p>No runs match these filters.</p>
          ) : (
            <>
              <p>No runs yet.</p>
              <p className="small">
                Open a workflow and press Run, or start one with <code>svc run</code>.{' '}
                <Link to="/">Your workflows</Link>
              </p>
            </>
          )}
        </div>
      )}
      {load.status === 'ready' && load.runs.length > 0 && (
        <>
          <table className="table runs-table">
            <caption className="visually-hidden">Runs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Workflow</th>
                <th scope="col" className="hide-narrow">Version</th>
                <th scope="col" className="num">
                  Cost<span className="hide-narrow"> / cap</span>
                </th>
                <th scope="col">Created</th>
                <th scope="col" className="num hide-narrow">Duration</th>
              </tr>
            </thead>
            <tbody>
              {load.runs.map((run) => {
                const ref = splitRef(run.workflowRef);
                const draft = draftRunName(run);
                return (
                  <tr key={run.id}>
                    <td>
                      <span className={`badge ${run.status}`}>{run.status}</span>
                    </td>
                    <td>
                      <Link to={`/runs/${run.id}`} className="run-link">
                        {ref ? ref.address : (draft ?? <span className="inline-ref">inline</span>)}
                        <span className="visually-hidden"> run {run.id.slice(0, 8)}</span>
                      </Link>
                    </td>
                    <td className="hide-narrow mono">{ref?.version || '—'}</td>
                    <td className="num mono">
                      {formatUsd(run.costUsd)}
                      <span className="muted hide-narrow"> / {formatUsd(run.maxCostUsd)}</span>
                    </td>
                    <td>
                      <time dateTime={run.createdAt} title={run.createdAt}>
                        {formatTime(run.createdAt)}
                      </time>
                    </td>
                    <td className="num hide-narrow mono">{run.finishedAt ? formatMs(runDuration(run)) : <span className="muted">running</span>}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <div className="runs-more">
            {load.nextCursor ? (
              <button type="button" className="button" onClick={() => void loadMore()} disabled={more.loading}>
                {more.loading ? 'Loading…' : 'Load more'}
              </button>
            ) : (
              <span className="muted small">{load.runs.length === 1 ? '1 run' : `${load.runs.length} runs`}, all shown</span>
            )}
          </div>
          {more.error && (
            <p className="error-text" role="alert">
              {more.error}
            </p>
          )}
        </>
      )}
    </main>
  );
}
