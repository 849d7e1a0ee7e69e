import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import type { Batch } from '../../../contract';
import { client, errorText } from '../lib/api';
import { formatTime, formatUsd } from '../lib/format';
import { LoadFailed, Loading } from '../ui/load-states';
import { rowsEnded } from './batch-view';
import './batches.css';

type Load = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; batches: Batch[]; nextCursor: string | null };

/** `/batches`: the organization's batches, newest first. */
export function BatchesPage() {
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    document.title = 'Batches · Studio';
  }, []);

  useEffect(() => {
    let live = true;
    setLoad({ status: 'loading' });
    client.routes['batches.list']({ limit: 50 }).then(
      (page) => live && setLoad({ status: 'ready', batches: page.batches, nextCursor: page.nextCursor }),
      (err: unknown) => live && setLoad({ status: 'error', message: errorText(err) }),
    );
    return () => {
      live = false;
    };
  }, [attempt]);

  const loadMore = async () => {
    if (load.status !== 'ready' || !load.nextCursor) return;
    const page = await client.routes['batches.list']({ limit: 50, cursor: load.nextCursor });
    setLoad({ status: 'ready', batches: [...load.batches, ...page.batches], nextCursor: page.nextCursor });
  };

  return (
    <main className="page">
      <div className="page-header">
        <h1>Batches</h1>
      </div>
      {load.status === 'loading' && <Loading>Loading batches…</Loading>}
      {load.status === 'error' && <LoadFailed what="the batches" message={load.message} onRetry={() => setAttempt((n) => n + 1)} />}
      {load.status === 'ready' && load.batches.length === 0 && (
        <div className="empty">
          <p>No batches yet.</p>
          <p className="small">
            A batch runs one workflow once per row of a file, under one spend cap: <code>svc batch acme/flow@1 --rows data.jsonl</code>, or{' '}
            <code>POST /v1/batches</code>.
          </p>
        </div>
      )}
      {load.status === 'ready' && load.batches.length > 0 && (
        <>
          <table className="table">
            <caption className="visually-hidden">Batches, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Workflow</th>
                <th scope="col" className="num">Rows ended</th>
                <th scope="col" className="num">Failed</th>
                <th scope="col" className="num">
                  Spent<span className="hide-narrow"> / cap</span>
                </th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {load.batches.map((batch) => (
                <tr key={batch.id}>
                  <td>
                    <span className={`badge ${batch.status === 'cancelling' ? 'running' : batch.status}`}>{batch.status}</span>
                  </td>
                  <td>
                    <Link to={`/batches/${batch.id}`}>{batch.workflowRef ?? <span className="inline-ref">inline</span>}</Link>
                    <span className="visually-hidden"> batch {batch.id.slice(0, 8)}</span>
                  </td>
                  <td className="num mono">
                    {rowsEnded(batch).toLocaleString('en-US')} / {batch.rows.total.toLocaleString('en-US')}
                  </td>
                  <td className="num mono">{batch.rows.failed > 0 ? <span className="error-text">{batch.rows.failed.toLocaleString('en-US')}</span> : '0'}</td>
                  <td className="num mono">
                    {formatUsd(batch.spentUsd)}
                    <span className="muted hide-narrow"> / {formatUsd(batch.maxCostUsd)}</span>
                  </td>
                  <td>
                    <time dateTime={batch.createdAt} title={batch.createdAt}>
                      {formatTime(batch.createdAt)}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {load.nextCursor && (
            <div className="runs-more">
              <button type="button" className="button" onClick={() => void loadMore()}>
                Load more
              </button>
            </div>
          )}
        </>
      )}
    </main>
  );
}
