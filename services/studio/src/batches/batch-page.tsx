import { useCallback, useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import type { Batch, BatchRow } from '../../../contract';
import { client, errorText } from '../lib/api';
import { formatTime, formatUsd } from '../lib/format';
import { Loading, PageLoadFailed } from '../ui/load-states';
import { batchEnded, canRetry, capBindsConcurrency, progressLine, progressSegments } from './batch-view';
import '../runs/runs.css';
import './batches.css';

/** How often a running batch is read again. */
const POLL_MS = 1000;
/** Failed rows listed on the page (the results file has them all). */
const FAILED_SHOWN = 50;

type Load = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; batch: Batch };

/**
 * `/batches/:id`: a batch's progress (a bar, counts by status, spend against its cap, rate and time
 * left, read again every second while it runs), its failed rows with their errors, the results
 * download, Cancel and Retry failed.
 */
export function BatchPage() {
  const { id = '' } = useParams();
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [failed, setFailed] = useState<BatchRow[]>([]);
  const [attempt, setAttempt] = useState(0);
  const [action, setAction] = useState<{ busy: boolean; error: string | null }>({ busy: false, error: null });

  const read = useCallback(async (): Promise<Batch> => {
    const batch = await client.routes['batches.get']({ id });
    setLoad({ status: 'ready', batch });
    if (batch.rows.failed > 0) setFailed((await client.routes['batches.rows']({ id, status: 'failed', limit: FAILED_SHOWN })).rows);
    else setFailed([]);
    return batch;
  }, [id]);

  useEffect(() => {
    document.title = `Batch ${id.slice(0, 8)} · Studio`;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = () => {
      read().then(
        (batch) => {
          if (live && !batchEnded(batch)) timer = setTimeout(tick, POLL_MS);
        },
        (err: unknown) => live && setLoad({ status: 'error', message: errorText(err) }),
      );
    };
    tick();
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [id, read, attempt]);

  const act = async (what: 'cancel' | 'retry') => {
    setAction({ busy: true, error: null });
    try {
      if (what === 'cancel') await client.routes['batches.cancel']({ id });
      else await client.routes['batches.retry']({ id });
      setAction({ busy: false, error: null });
      setAttempt((n) => n + 1);
    } catch (err) {
      setAction({ busy: false, error: errorText(err) });
    }
  };

  const download = async (format: 'jsonl' | 'csv') => {
    setAction({ busy: false, error: null });
    try {
      const link = await client.routes['batches.results']({ id, format });
      window.open(link.url, '_blank', 'noopener');
    } catch (err) {
      setAction({ busy: false, error: errorText(err) });
    }
  };

  if (load.status === 'loading') return <Loading>Loading the batch…</Loading>;
  if (load.status === 'error') return <PageLoadFailed what="the batch" message={load.message} onRetry={() => setAttempt((n) => n + 1)} back={{ to: '/batches', label: 'All batches' }} />;
  const { batch } = load;
  const segments = progressSegments(batch);
  const spentPct = batch.maxCostUsd > 0 ? Math.min(100, ((batch.spentUsd + batch.heldUsd) / batch.maxCostUsd) * 100) : 0;
  return (
    <main className="page stack">
      <div className="page-header">
        <h1>
          Batch <span className="mono">{batch.id.slice(0, 8)}</span>
        </h1>
        <span className={`badge ${batch.status === 'cancelling' ? 'running' : batch.status}`} data-testid="batch-status">
          {batch.status}
        </span>
        {!batchEnded(batch) && (
          <button type="button" className="button danger" disabled={action.busy || batch.status === 'cancelling'} onClick={() => void act('cancel')}>
            Cancel
          </button>
        )}
        {canRetry(batch) && (
          <button type="button" className="button primary" disabled={action.busy} onClick={() => void act('retry')}>
            Retry failed ({(batch.rows.failed + batch.rows.cancelled).toLocaleString('en-US')})
          </button>
        )}
        <button type="button" className="button" onClick={() => void download('jsonl')}>
          Results (JSON Lines)
        </button>
        <button type="button" className="button" onClick={() => void download('csv')}>
          CSV
        </button>
      </div>
      {action.error && (
        <p className="error-text" role="alert">
          {action.error}
        </p>
      )}

      <section className="card stack" aria-label="Progress">
        <div className="batch-progress" role="progressbar" aria-valuemin={0} aria-valuemax={batch.rows.total} aria-valuenow={batch.rows.total - batch.rows.pending - batch.rows.running} aria-label="Rows ended">
          <span className="completed" style={{ width: `${segments.completed}%` }} />
          <span className="failed" style={{ width: `${segments.failed}%` }} />
          <span className="cancelled" style={{ width: `${segments.cancelled}%` }} />
          <span className="running" style={{ width: `${segments.running}%` }} />
        </div>
        <p className="muted" data-testid="batch-progress-line">
          {progressLine(batch)}
        </p>
        <dl className="batch-counts">
          {(['pending', 'running', 'completed', 'failed', 'cancelled', 'skipped'] as const).map((status) => (
            <div key={status}>
              <dt>{status}</dt>
              <dd className={status === 'failed' && batch.rows.failed > 0 ? 'error-text' : undefined}>{batch.rows[status].toLocaleString('en-US')}</dd>
            </div>
          ))}
        </dl>
      </section>

      <section className="card stack" aria-label="Spend">
        <div className="cost-bar-label">
          Spent <strong>{formatUsd(batch.spentUsd)}</strong> of the {formatUsd(batch.maxCostUsd)} cap
          {batch.heldUsd > 0 && <span className="muted"> · {formatUsd(batch.heldUsd)} held by rows in flight</span>}
        </div>
        <div className="meter">
          <div className={`meter-fill${spentPct > 80 ? ' high' : ''}`} style={{ width: `${spentPct}%` }} />
        </div>
        {capBindsConcurrency(batch) && (
          <p className="small" data-testid="cap-hint">
            Fewer rows run at once than its concurrency ({batch.concurrency}): each row in flight holds its whole cap ({formatUsd(batch.rowMaxCostUsd)}) against the batch's
            until it ends, and the cap has room for {Math.max(1, batch.rows.running)} now. A lower <code>rowMaxCostUsd</code> lets more run at once.
          </p>
        )}
        <dl className="detail-grid">
          <dt>Workflow</dt>
          <dd className="mono">{batch.workflowRef ?? 'inline definition'}</dd>
          <dt>Each row</dt>
          <dd>up to {formatUsd(batch.rowMaxCostUsd)}, {batch.concurrency} rows at once</dd>
          <dt>Attempt</dt>
          <dd>{batch.attempt}</dd>
          <dt>Created</dt>
          <dd>{formatTime(batch.createdAt)}</dd>
          {batch.finishedAt && (
            <>
              <dt>Ended</dt>
              <dd>{formatTime(batch.finishedAt)}</dd>
            </>
          )}
          {batch.stopReason && (
            <>
              <dt>Stopped</dt>
              <dd className="error-text">{batch.stopReason.message}</dd>
            </>
          )}
        </dl>
      </section>

      {failed.length > 0 && (
        <section className="stack" aria-label="Failed rows">
          <h2>Failed rows</h2>
          <table className="table">
            <thead>
              <tr>
                <th scope="col" className="num">Row</th>
                <th scope="col">Error</th>
                <th scope="col">Run</th>
              </tr>
            </thead>
            <tbody>
              {failed.map((row) => (
                <tr key={row.row}>
                  <td className="num mono">{row.row}</td>
                  <td className="row-error">
                    <span className="mono small">{row.error?.code}</span> {row.error?.message}
                  </td>
                  <td>{row.runId ? <Link to={`/runs/${row.runId}`}>{row.runId.slice(0, 8)}</Link> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {batch.rows.failed > failed.length && <p className="muted small">The first {failed.length} of {batch.rows.failed.toLocaleString('en-US')}; the results file lists them all.</p>}
        </section>
      )}

      {batch.skippedRows.length > 0 && (
        <section className="stack" aria-label="Skipped rows">
          <h2>Rows refused at creation ({batch.rows.skipped.toLocaleString('en-US')})</h2>
          <ul className="small">
            {batch.skippedRows.map((problem) => (
              <li key={`${problem.row}-${problem.field ?? ''}`}>
                row {problem.row}
                {problem.field ? ` (${problem.field})` : ''}: {problem.message}
              </li>
            ))}
          </ul>
        </section>
      )}
      <p>
        <Link to="/batches">All batches</Link> · <Link to={`/runs?batch=${batch.id}`}>Its runs</Link>
      </p>
    </main>
  );
}
