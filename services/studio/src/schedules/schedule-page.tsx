import { useEffect, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { Schedule } from '../../../contract';
import { tickLine } from '../../../sdk/src';
import { client, errorText } from '../lib/api';
import { formatTime, formatUsd } from '../lib/format';
import { Loading, PageLoadFailed } from '../ui/load-states';
import '../batches/batches.css';

type Load = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; schedule: Schedule };

/**
 * `/schedules/:id`: what a schedule runs and when, its next ticks in its time zone, its latest ticks
 * with their runs (or why they failed or were skipped), its spend this month against its budget,
 * why it is paused (by a caller, or by itself), and Pause, Resume and Delete.
 */
export function SchedulePage() {
  const { id = '' } = useParams();
  const navigate = useNavigate();
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const [action, setAction] = useState<{ busy: boolean; error: string | null; confirmDelete: boolean }>({ busy: false, error: null, confirmDelete: false });

  useEffect(() => {
    document.title = `Schedule ${id.slice(0, 8)} · Studio`;
    let live = true;
    client.routes['schedules.get']({ id }).then(
      (schedule) => live && setLoad({ status: 'ready', schedule }),
      (err: unknown) => live && setLoad({ status: 'error', message: errorText(err) }),
    );
    return () => {
      live = false;
    };
  }, [id, attempt]);

  const act = async (what: 'pause' | 'resume' | 'delete') => {
    setAction({ busy: true, error: null, confirmDelete: false });
    try {
      if (what === 'delete') {
        await client.routes['schedules.delete']({ id });
        navigate('/schedules');
        return;
      }
      const schedule = await client.routes[what === 'pause' ? 'schedules.pause' : 'schedules.resume']({ id });
      setLoad({ status: 'ready', schedule });
      setAction({ busy: false, error: null, confirmDelete: false });
    } catch (err) {
      setAction({ busy: false, error: errorText(err), confirmDelete: false });
    }
  };

  if (load.status === 'loading') return <Loading>Loading the schedule…</Loading>;
  if (load.status === 'error') return <PageLoadFailed what="the schedule" message={load.message} onRetry={() => setAttempt((n) => n + 1)} back={{ to: '/schedules', label: 'All schedules' }} />;
  const { schedule } = load;
  const inputs = Object.entries(schedule.inputs);
  return (
    <main className="page stack">
      <div className="page-header">
        <h1>{schedule.name ?? `Schedule ${schedule.id.slice(0, 8)}`}</h1>
        <span className={`badge ${schedule.status === 'active' ? 'ok' : 'warn'}`} data-testid="schedule-status">
          {schedule.status}
        </span>
        {schedule.status === 'active' ? (
          <button type="button" className="button" disabled={action.busy} onClick={() => void act('pause')}>
            Pause
          </button>
        ) : (
          <button type="button" className="button primary" disabled={action.busy} onClick={() => void act('resume')}>
            Resume
          </button>
        )}
        {action.confirmDelete ? (
          <>
            <button type="button" className="button danger solid" disabled={action.busy} onClick={() => void act('delete')}>
              Delete for good
            </button>
            <button type="button" className="button subtle" onClick={() => setAction({ ...action, confirmDelete: false })}>
              Keep it
            </button>
          </>
        ) : (
          <button type="button" className="button danger" disabled={action.busy} onClick={() => setAction({ ...action, confirmDelete: true })}>
            Delete
          </button>
        )}
      </div>
      {action.error && (
        <p className="error-text" role="alert">
          {action.error}
        </p>
      )}
      {schedule.pauseReason && (
        <div className={`card ${schedule.pauseReason.by === 'service' ? 'run-error' : ''}`} role="status" data-testid="pause-reason">
          <strong>{schedule.pauseReason.by === 'service' ? 'Paused itself' : 'Paused'}</strong> {formatTime(schedule.pauseReason.at)}: {schedule.pauseReason.message}
        </div>
      )}

      <section className="card">
        <dl className="detail-grid">
          <dt>Runs</dt>
          <dd className="mono">{schedule.workflowRef}</dd>
          <dt>Inputs</dt>
          <dd className="mono">{inputs.length === 0 ? '—' : inputs.map(([name, value]) => `${name} = ${JSON.stringify((value as { value?: unknown; ref?: string }).value ?? (value as { ref?: string }).ref)}`).join(', ')}</dd>
          <dt>When</dt>
          <dd>
            <span className="mono">{schedule.cron}</span> in {schedule.timezone}; a tick missed while no worker ran is run late within {schedule.catchUpSeconds} s
          </dd>
          <dt>Money</dt>
          <dd>
            up to {formatUsd(schedule.maxCostUsd)} a run
            {schedule.monthlyBudgetUsd !== null && <>, {formatUsd(schedule.monthlyBudgetUsd)} a month</>}; spent this month <strong>{formatUsd(schedule.spentThisMonthUsd)}</strong>
          </dd>
          <dt>Next</dt>
          <dd>{schedule.nextTicks.length === 0 ? <span className="muted">none while paused</span> : schedule.nextTicks.map((tick) => tickLine(tick, schedule.timezone)).join(' · ')}</dd>
          {schedule.webhook && (
            <>
              <dt>Webhook</dt>
              <dd>
                <span className="mono">{schedule.webhook.url}</span> <span className="muted">({schedule.webhook.state})</span>
              </dd>
            </>
          )}
        </dl>
      </section>

      <section className="stack" aria-label="Latest ticks">
        <h2>Latest ticks</h2>
        {schedule.recentTicks.length === 0 ? (
          <p className="muted">No tick yet.</p>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Tick</th>
                <th scope="col">Outcome</th>
                <th scope="col">Run</th>
                <th scope="col" className="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {schedule.recentTicks.map((tick) => (
                <tr key={tick.tickAt}>
                  <td>
                    <time dateTime={tick.tickAt} title={tick.tickAt}>
                      {tickLine(tick.tickAt, schedule.timezone)}
                    </time>
                  </td>
                  <td className="row-error">
                    <span className={`badge ${tick.status === 'started' ? 'ok' : tick.status === 'failed' ? 'failed' : tick.status === 'skipped' ? 'skipped' : 'running'}`}>
                      {tick.status === 'skipped' && tick.skippedCount > 1 ? `skipped ×${tick.skippedCount}` : tick.status}
                    </span>{' '}
                    {tick.error && <span className="small">{tick.error.message}</span>}
                  </td>
                  <td>
                    {tick.runId ? (
                      <>
                        <Link to={`/runs/${tick.runId}`}>{tick.runId.slice(0, 8)}</Link> {tick.runStatus && <span className={`badge ${tick.runStatus}`}>{tick.runStatus}</span>}
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td className="num mono">{tick.costUsd === null ? '—' : formatUsd(tick.costUsd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <p>
        <Link to="/schedules">All schedules</Link> · <Link to={`/runs?schedule=${schedule.id}`}>Its runs</Link>
      </p>
    </main>
  );
}
