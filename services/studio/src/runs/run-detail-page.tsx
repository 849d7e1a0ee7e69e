import { useEffect, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { ROUTES, type Run } from '../../../contract';
import { GraphView } from '../editor/graph-view';
import { client, errorText } from '../lib/api';
import { formatMs, formatTime, formatUsd } from '../lib/format';
import { OutputsList } from './output-view';
import { applyEvent, initialRunState, type RunState } from './run-state';
import { draftRunName, splitRef } from './runs-page';
import { CostBar, StepBadge } from './step-list';
import type { StepView, StepViews } from './step-views';
import { Loading } from '../ui/load-states';
import './runs.css';

type Load = { status: 'loading' } | { status: 'error'; message: string; notFound: boolean } | { status: 'ready'; run: Run };

/** Merges a live view (from events) over the record's steps, for a run followed while it goes. */
export function mergeLive(run: Run, live: RunState | null): { run: Run; steps: StepViews } {
  const steps: Record<string, StepView> = {};
  for (const s of run.steps) {
    steps[s.nodeId] = { status: s.status, costUsd: s.costUsd, ...(s.ms !== null ? { ms: s.ms } : {}), ...(s.error ? { error: s.error } : {}) };
  }
  if (!live) return { run, steps };
  for (const [id, view] of Object.entries(live.steps)) steps[id] = { ...steps[id], ...view };
  const status = live.phase === 'completed' || live.phase === 'failed' ? live.phase : run.status;
  return {
    run: {
      ...run,
      status,
      steps: run.steps.map((s) => {
        const v = steps[s.nodeId]!;
        return { ...s, status: v.status, costUsd: v.costUsd ?? s.costUsd, ms: v.ms ?? s.ms, ...(v.error ? { error: v.error } : {}) };
      }),
      outputs: live.outputs ?? run.outputs,
      error: live.error ?? run.error,
      costUsd: Math.max(run.costUsd, live.costMicros / 1_000_000),
    },
    steps,
  };
}

/** `/runs/:id`: one run: its status, money, times, graph coloured by step, steps and outputs; live while it goes. */
export function RunDetailPage() {
  const { id = '' } = useParams();
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [live, setLive] = useState<RunState | null>(null);
  const [followError, setFollowError] = useState<string | null>(null);

  useEffect(() => {
    document.title = `Run ${id.slice(0, 8)} · Studio`;
    const controller = new AbortController();
    setLoad({ status: 'loading' });
    setLive(null);
    setFollowError(null);
    void (async () => {
      let record: Run;
      try {
        record = await client.routes['runs.get']({ id }, { signal: controller.signal });
      } catch (err) {
        if (!controller.signal.aborted) setLoad({ status: 'error', message: errorText(err), notFound: (err as { status?: number }).status === 404 });
        return;
      }
      if (controller.signal.aborted) return;
      setLoad({ status: 'ready', run: record });
      if (record.status !== 'running' && record.status !== 'pending') return;
      // Still going: follow its events and update the view; then read the final record.
      try {
        const handle = client.follow(ROUTES['runs.events'], { id, after: 0 }, { signal: controller.signal });
        let state = initialRunState;
        for await (const event of handle.events()) {
          state = applyEvent(state, event);
          setLive(state);
        }
        const final = await client.routes['runs.get']({ id }, { signal: controller.signal });
        if (!controller.signal.aborted) {
          setLoad({ status: 'ready', run: final });
          setLive(null);
        }
      } catch (err) {
        if (!controller.signal.aborted) setFollowError(errorText(err));
      }
    })();
    return () => controller.abort();
  }, [id]);

  const view = useMemo(() => (load.status === 'ready' ? mergeLive(load.run, live) : null), [load, live]);

  if (load.status === 'loading') return <main className="page"><Loading>Loading the run…</Loading></main>;
  if (load.status === 'error') {
    return (
      <main className="page">
        <div className="page-header"><h1>Run</h1></div>
        <p className="error-text" role="alert">{load.message}</p>
        <p><Link to="/runs">All runs</Link></p>
      </main>
    );
  }
  const { run, steps } = view!;
  const ref = splitRef(run.workflowRef);
  const draft = draftRunName(run);
  const labels = Object.fromEntries((run.workflow?.nodes ?? []).map((n) => [n.id, n.label?.trim() || n.id]));
  const uses = Object.fromEntries((run.workflow?.nodes ?? []).map((n) => [n.id, n.uses]));
  const going = run.status === 'running' || run.status === 'pending';
  const duration = run.finishedAt ? Date.parse(run.finishedAt) - Date.parse(run.startedAt ?? run.createdAt) : null;

  return (
    <main className="page">
      <nav aria-label="Breadcrumb" className="small"><Link to="/runs">Runs</Link> /</nav>
      <div className="page-header">
        <h1>
          {ref ? ref.address : (draft ?? 'Inline run')} <span className="muted mono small">{run.id.slice(0, 8)}</span>
        </h1>
        <span className={`badge ${run.status}`} aria-live="polite">{run.status}</span>
      </div>
      <div className="run-detail-grid">
        <section className="card stack" aria-label="Summary">
          <dl className="run-facts">
            <div><dt>Workflow</dt><dd>{ref ? <>{ref.address} <span className="mono">@{ref.version}</span></> : draft && run.workflowId ? <Link to={`/workflows/${run.workflowId}`}>{draft}</Link> : 'inline definition'}</dd></div>
            <div><dt>Cost / cap</dt><dd className="mono">{formatUsd(run.costUsd)} / {formatUsd(run.maxCostUsd)}</dd></div>
            <div><dt>Created</dt><dd><time dateTime={run.createdAt} title={run.createdAt}>{formatTime(run.createdAt)}</time></dd></div>
            <div><dt>Finished</dt><dd>{run.finishedAt ? <time dateTime={run.finishedAt} title={run.finishedAt}>{formatTime(run.finishedAt)}</time> : <span className="muted">not yet</span>}</dd></div>
            <div><dt>Duration</dt><dd className="mono">{duration !== null ? formatMs(Math.max(0, duration)) : '—'}</dd></div>
            <div><dt>Run id</dt><dd className="mono small">{run.id}</dd></div>
          </dl>
          <CostBar spentUsd={run.costUsd} capUsd={run.maxCostUsd} />
          {run.error && (
            <div className="run-error" role="alert">
              <strong>{run.error.code}</strong>
              <p>{run.error.message}</p>
            </div>
          )}
          {going && !followError && <p className="muted small" role="status">Following the run live…</p>}
          {followError && <p className="error-text" role="alert">{followError}</p>}
        </section>

        {run.workflow && (
          <section aria-label="Graph">
            <h2>Graph</h2>
            <GraphView definition={run.workflow} layout={null} steps={steps} height="clamp(240px, 45vw, 420px)" />
          </section>
        )}

        <section aria-label="Steps">
          <h2>Steps</h2>
          {run.steps.length === 0 ? (
            <p className="empty">No steps recorded.</p>
          ) : (
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">Cost</th>
                  <th scope="col" className="num hide-narrow">Time</th>
                  <th scope="col" className="hide-narrow">Error</th>
                </tr>
              </thead>
              <tbody>
                {run.steps.map((s) => (
                  <tr key={s.nodeId}>
                    <td>
                      <div className="step-name">{labels[s.nodeId] ?? s.nodeId}</div>
                      {uses[s.nodeId] && <div className="muted small mono">{uses[s.nodeId]}</div>}
                      {s.error && <div className="error-text small step-error-narrow">{s.error.code}: {s.error.message}</div>}
                    </td>
                    <td><StepBadge status={s.status} message={steps[s.nodeId]?.message} /></td>
                    <td className="num mono">{formatUsd(s.costUsd)}</td>
                    <td className="num mono hide-narrow">{s.ms !== null ? formatMs(s.ms) : '—'}</td>
                    <td className="hide-narrow error-cell">{s.error ? <><strong>{s.error.code}</strong>: {s.error.message}</> : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>

        <section aria-label="Outputs">
          <h2>Outputs</h2>
          {run.outputs ? <OutputsList outputs={run.outputs} /> : <p className="muted">{going ? 'The outputs appear when the run completes.' : 'No outputs: the run did not complete.'}</p>}
        </section>

        {run.webhook && (
          <section aria-label="Webhook">
            <h2>Webhook</h2>
            <p className="muted small">
              <span className="mono">{run.webhook.url}</span> · {run.webhook.events.join(', ')}
            </p>
            {run.webhook.deliveries.length === 0 ? (
              <p className="muted">Nothing delivered yet.</p>
            ) : (
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">Attempts</th>
                    <th scope="col" className="hide-narrow">Last answer</th>
                  </tr>
                </thead>
                <tbody>
                  {run.webhook.deliveries.map((d) => (
                    <tr key={d.seq}>
                      <td className="mono">
                        {d.seq}: {d.type}
                      </td>
                      <td>
                        <span className={`badge ${d.status === 'delivered' ? 'completed' : d.status}`}>{d.status}</span>
                        {d.status === 'pending' && d.nextAttemptAt && <div className="muted small">next try {new Date(d.nextAttemptAt).toLocaleTimeString()}</div>}
                      </td>
                      <td className="num mono">{d.attempts}</td>
                      <td className="hide-narrow">{d.lastError ?? (d.lastStatusCode !== null ? `answered ${d.lastStatusCode}` : '—')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        )}
      </div>
    </main>
  );
}
