import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import type { Schedule } from '../../../contract';
import { tickLine } from '../../../sdk/src';
import { client, errorText } from '../lib/api';
import { LoadFailed, Loading } from '../ui/load-states';
import { browserTimeZone, scheduleRequest, type ScheduleDraft } from './schedule-form';
import '../batches/batches.css';

type Load = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; schedules: Schedule[] };

const EMPTY: ScheduleDraft = { workflowRef: '', cron: '0 9 * * 1-5', timezone: browserTimeZone(), name: '', inputs: '', maxCostUsd: '', monthlyBudgetUsd: '' };

/** `/schedules`: the organization's schedules (a paused one says why), and a form for a new one. */
export function SchedulesPage() {
  const navigate = useNavigate();
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const [creating, setCreating] = useState(false);
  const [draft, setDraft] = useState<ScheduleDraft>(EMPTY);
  const [problem, setProblem] = useState<{ field: keyof ScheduleDraft | null; message: string } | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    document.title = 'Schedules · Studio';
  }, []);

  useEffect(() => {
    let live = true;
    setLoad({ status: 'loading' });
    client.routes['schedules.list']({ limit: 100 }).then(
      (page) => live && setLoad({ status: 'ready', schedules: page.schedules }),
      (err: unknown) => live && setLoad({ status: 'error', message: errorText(err) }),
    );
    return () => {
      live = false;
    };
  }, [attempt]);

  const submit = async () => {
    const checked = scheduleRequest(draft);
    if (!checked.ok) {
      setProblem({ field: checked.field, message: checked.message });
      return;
    }
    setBusy(true);
    setProblem(null);
    try {
      const created = await client.routes['schedules.create'](checked.request);
      navigate(`/schedules/${created.id}`);
    } catch (err) {
      setProblem({ field: null, message: errorText(err) });
      setBusy(false);
    }
  };

  const field = (name: keyof ScheduleDraft, label: string, hint: string, wide = false) => (
    <label className={`field${wide ? ' wide' : ''}`}>
      <span>
        {label} <span className="hint">{hint}</span>
      </span>
      {name === 'inputs' ? (
        <textarea value={draft[name]} onChange={(e) => setDraft({ ...draft, [name]: e.target.value })} spellCheck={false} aria-invalid={problem?.field === name} />
      ) : (
        <input value={draft[name]} onChange={(e) => setDraft({ ...draft, [name]: e.target.value })} spellCheck={false} autoCapitalize="off" aria-invalid={problem?.field === name} />
      )}
    </label>
  );

  return (
    <main className="page stack">
      <div className="page-header">
        <h1>Schedules</h1>
        {!creating && (
          <button type="button" className="button primary" onClick={() => setCreating(true)}>
            New schedule
          </button>
        )}
      </div>
      {creating && (
        <form
          className="card stack"
          aria-label="New schedule"
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <div className="schedule-form">
            {field('workflowRef', 'Workflow', 'a published ref: acme/flow@1, @latest', true)}
            {field('cron', 'Cron', 'minute hour day month weekday')}
            {field('timezone', 'Time zone', 'IANA, e.g. Europe/Paris')}
            {field('name', 'Name', 'optional')}
            {field('maxCostUsd', 'Cap per run (USD)', 'default 0.50')}
            {field('monthlyBudgetUsd', 'Monthly budget (USD)', 'optional')}
            {field('inputs', 'Inputs', 'JSON: {"shop": "eu"}', true)}
          </div>
          {problem && (
            <p className="error-text" role="alert">
              {problem.message}
            </p>
          )}
          <div className="row">
            <button type="submit" className="button primary" disabled={busy}>
              {busy ? 'Creating…' : 'Create schedule'}
            </button>
            <button
              type="button"
              className="button subtle"
              onClick={() => {
                setCreating(false);
                setProblem(null);
              }}
            >
              Cancel
            </button>
          </div>
        </form>
      )}
      {load.status === 'loading' && <Loading>Loading schedules…</Loading>}
      {load.status === 'error' && <LoadFailed what="the schedules" message={load.message} onRetry={() => setAttempt((n) => n + 1)} />}
      {load.status === 'ready' && load.schedules.length === 0 && !creating && (
        <div className="empty">
          <p>No schedules yet.</p>
          <p className="small">A schedule runs a published workflow with fixed inputs at every tick of a cron expression, under a cap per run and an optional monthly budget.</p>
        </div>
      )}
      {load.status === 'ready' && load.schedules.length > 0 && (
        <table className="table">
          <caption className="visually-hidden">Schedules, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Schedule</th>
              <th scope="col">When</th>
              <th scope="col">Next</th>
              <th scope="col" className="hide-narrow">Workflow</th>
            </tr>
          </thead>
          <tbody>
            {load.schedules.map((schedule) => (
              <tr key={schedule.id}>
                <td>
                  <span className={`badge ${schedule.status === 'active' ? 'ok' : 'warn'}`} title={schedule.pauseReason?.message}>
                    {schedule.status === 'paused' && schedule.pauseReason?.by === 'service' ? `paused: ${schedule.pauseReason.code}` : schedule.status}
                  </span>
                </td>
                <td>
                  <Link to={`/schedules/${schedule.id}`}>{schedule.name ?? schedule.id.slice(0, 8)}</Link>
                </td>
                <td className="mono">
                  {schedule.cron} <span className="muted">{schedule.timezone}</span>
                </td>
                <td>{schedule.nextTicks[0] ? tickLine(schedule.nextTicks[0], schedule.timezone) : '—'}</td>
                <td className="hide-narrow mono">{schedule.workflowRef}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
