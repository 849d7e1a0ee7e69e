import { useCallback, useEffect, useId, useMemo, useReducer, useRef, useState } from 'react';
import { Link } from 'react-router';
import { ROUTES, type Workflow } from '../../../contract';
import { InsufficientCreditError, InvalidInputError, RateLimitError, startRun, upload, type RunHandle } from '../../../sdk/src';
import { client, errorText } from '../lib/api';
import { formatMs, formatUsd } from '../lib/format';
import { EstimateLine, useRunEstimate } from './run-estimate';
import { useSession } from '../lib/session';
import { buildInputs, deriveFields, initialValues, issuesByField, type FieldValue, type FormField } from './input-form';
import { OutputsList } from './output-view';
import { forget, recall, recallValues, remember, rememberValues } from './resume';
import { applyEvent, fromMicros, initialRunState, isFinished, stateOfRun, type RunState, type SeqEvent } from './run-state';
import type { StepViews } from './step-views';
import { CostBar, StepList } from './step-list';
import { InputField } from './run-input-field';
import './runs.css';

export interface RunPanelProps {
  /** The definition to run: the editor's draft (its form and steps are drawn from it). */
  definition: Workflow;
  /**
   * The workflow whose saved draft runs (`editor.workflows.run`), recorded under it; without
   * one, `definition` runs inline.
   */
  workflowId?: string;
  /** Called before a run starts (the editor saves the canvas, so the server's draft is the one shown); a throw refuses the run. */
  prepare?: () => Promise<void>;
  /** Key under which an unfinished run is remembered, so a reload resumes it (the workflow id). */
  resumeKey: string;
  /** Every change of the steps' states, for the canvas to light nodes up. */
  onSteps(steps: StepViews): void;
  onClose(): void;
}

/** The spend cap a run gets unless changed, and the most the service allows (contract max-cost.ts). */
export const DEFAULT_CAP_USD = 0.5;
export const CAP_CEILING_USD = 1;

type Action = { type: 'event'; event: SeqEvent } | { type: 'replace'; state: RunState } | { type: 'reset' };

function reduce(state: RunState, action: Action): RunState {
  if (action.type === 'event') return applyEvent(state, action.event);
  if (action.type === 'replace') return action.state;
  return initialRunState;
}

/** Why a run was refused, in the service's words, with the issues placed by input. */
interface Refusal {
  message: string;
  detail?: string;
  byField: Record<string, string[]>;
  other: string[];
}

function refusalOf(err: unknown, fields: readonly FormField[]): Refusal {
  if (err instanceof InvalidInputError) {
    const { byField, other } = issuesByField(fields, err.issues);
    const placed = Object.keys(byField).length;
    // Every issue is shown beside its input (in the service's words): the summary only points there.
    const message = placed > 0 && other.length === 0 ? `The service refused ${placed === 1 ? 'an input' : `${placed} inputs`}: see above.` : err.message;
    return { message, byField, other };
  }
  if (err instanceof InsufficientCreditError) {
    return { message: err.message, detail: err.balanceUsd !== undefined ? `Balance: ${formatUsd(err.balanceUsd)}` : undefined, byField: {}, other: [] };
  }
  if (err instanceof RateLimitError) {
    return { message: err.message, detail: err.retryAfterSeconds !== undefined ? `Try again in ${err.retryAfterSeconds} s.` : undefined, byField: {}, other: [] };
  }
  return { message: errorText(err), byField: {}, other: [] };
}

/** The editor's run panel: the workflow's inputs as a form, the cap, the live run, its outputs. */
export function RunPanel({ definition, workflowId, prepare, resumeKey, onSteps, onClose }: RunPanelProps) {
  const fields = useMemo(() => deriveFields(definition), [definition]);
  const [values, setValues] = useState<Record<string, FieldValue>>(() => ({ ...initialValues(fields), ...recallValues(resumeKey, fields) }));
  const [capText, setCapText] = useState(String(DEFAULT_CAP_USD.toFixed(2)));
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [streamError, setStreamError] = useState<string | null>(null);
  const [run, dispatch] = useReducer(reduce, initialRunState);
  const [active, setActive] = useState(false);
  const [cancelling, setCancelling] = useState(false);
  const [capUsd, setCapUsd] = useState(DEFAULT_CAP_USD);
  const [uploading, setUploading] = useState<Record<string, boolean>>({});
  const abortRef = useRef<AbortController | null>(null);
  const onStepsRef = useRef(onSteps);
  onStepsRef.current = onSteps;
  const headingId = useId();
  const formId = `${headingId}-form`;
  const formRef = useRef<HTMLFormElement>(null);

  useEffect(() => rememberValues(resumeKey, values), [resumeKey, values]);

  // Keep values for fields that still exist when the definition changes; fill new ones.
  useEffect(() => {
    setValues((prev) => {
      const fresh = initialValues(fields);
      for (const f of fields) if (prev[f.id] && prev[f.id]!.widget === fresh[f.id]!.widget) fresh[f.id] = prev[f.id]!;
      return fresh;
    });
  }, [fields]);

  useEffect(() => {
    onStepsRef.current(run.steps);
  }, [run.steps]);

  /** Follows a handle to its end, applying and remembering each event. */
  const follow = useCallback(
    async (handle: RunHandle, cap: number) => {
      let lastSeq = 0;
      let runId: string | null = null;
      try {
        for await (const event of handle.events()) {
          dispatch({ type: 'event', event });
          if (event.type === 'run.started') runId = event.runId;
          runId ??= await handle.runId;
          lastSeq = event.seq;
          const finished = event.type === 'run.completed' || event.type === 'run.failed';
          remember(resumeKey, { runId, lastSeq, finished, maxCostUsd: cap });
          if (event.type === 'run.failed' && runId !== null) {
            // A stopped run's events do not carry what its stopped attempts were charged, nor which
            // steps were skipped: its record does. Shown when it answers; the events' view until then.
            const stoppedRunId = runId;
            const at = lastSeq;
            void client.routes['runs.get']({ id: stoppedRunId }).then(
              (record) => dispatch({ type: 'replace', state: stateOfRun(record, at) }),
              () => undefined,
            );
          }
        }
      } catch (err) {
        if ((err as Error)?.name === 'AbortError' || abortRef.current?.signal.aborted) return;
        if (runId === null) setRefusal(refusalOf(err, fields));
        else setStreamError(errorText(err));
      } finally {
        if (!abortRef.current?.signal.aborted) {
          setActive(false);
          void useSession.getState().refresh().catch(() => undefined);
        }
      }
    },
    [resumeKey, fields],
  );

  // On mount: reattach to a remembered run, or show how it ended while away.
  useEffect(() => {
    const remembered = recall(resumeKey);
    if (!remembered) return;
    const controller = new AbortController();
    abortRef.current = controller;
    setCapUsd(remembered.maxCostUsd);
    setActive(true);
    void (async () => {
      try {
        const record = await client.routes['runs.get']({ id: remembered.runId }, { signal: controller.signal });
        if (controller.signal.aborted) return;
        setCapUsd(record.maxCostUsd);
        if (record.status === 'completed' || record.status === 'failed' || record.status === 'cancelled') {
          dispatch({ type: 'replace', state: stateOfRun(record, remembered.lastSeq) });
          remember(resumeKey, { ...remembered, finished: true });
          setActive(false);
          return;
        }
        // Still going: replay every event (the step views are rebuilt from them), then follow live.
        dispatch({ type: 'replace', state: { ...initialRunState, runId: record.id, startedAtMs: Date.parse(record.startedAt ?? record.createdAt) } });
        const handle = client.follow(ROUTES['runs.events'], { id: remembered.runId, after: 0 }, { signal: controller.signal });
        await follow(handle, record.maxCostUsd);
      } catch (err) {
        if (controller.signal.aborted) return;
        setActive(false);
        if ((err as { status?: number }).status === 404) forget(resumeKey);
        else setStreamError(errorText(err));
      }
    })();
    return () => controller.abort();
    // Only on mount (and when the key changes): a remembered run is reattached once.
  }, [resumeKey]);

  useEffect(() => () => abortRef.current?.abort(), []);

  const setValue = (id: string, value: FieldValue) => {
    setValues((prev) => ({ ...prev, [id]: value }));
    setRefusal((prev) => {
      if (!prev?.byField[id]) return prev;
      const { [id]: _gone, ...byField } = prev.byField;
      return { ...prev, byField };
    });
    setFieldErrors((prev) => {
      if (!prev[id]) return prev;
      const { [id]: _removed, ...rest } = prev;
      return rest;
    });
  };

  const cap = Number(capText);
  const capError = !Number.isFinite(cap) || cap < 0.000001 ? 'Give a cap of at least $0.000001.' : cap > CAP_CEILING_USD ? `The ceiling is ${formatUsd(CAP_CEILING_USD)}: larger caps are lowered to it.` : null;
  const capInvalid = !Number.isFinite(cap) || cap < 0.000001;
  const busyUploading = Object.values(uploading).some(Boolean);
  const estimateInputs = useMemo(() => {
    const built = buildInputs(fields, values);
    return built.ok ? built.inputs : null;
  }, [fields, values]);
  const estimate = useRunEstimate(definition, estimateInputs, capInvalid ? null : Math.min(cap, CAP_CEILING_USD));

  const submit = (event: React.FormEvent) => {
    event.preventDefault();
    if (active || busyUploading || capInvalid) return;
    const built = buildInputs(fields, values);
    if (!built.ok) {
      setFieldErrors(built.errors);
      // Take the person to the first input to fix.
      requestAnimationFrame(() => formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
      return;
    }
    setFieldErrors({});
    setRefusal(null);
    setStreamError(null);
    const effectiveCap = Math.min(cap, CAP_CEILING_USD);
    setCapUsd(effectiveCap);
    dispatch({ type: 'reset' });
    abortRef.current?.abort();
    const controller = new AbortController();
    abortRef.current = controller;
    setActive(true);
    void (async () => {
      try {
        await prepare?.();
      } catch (err) {
        if (controller.signal.aborted) return;
        setRefusal({ message: errorText(err), byField: {}, other: [] });
        setActive(false);
        return;
      }
      if (controller.signal.aborted) return;
      const options = { signal: controller.signal };
      const handle = workflowId
        ? client.follow(ROUTES['editor.workflows.run'], { id: workflowId, inputs: built.inputs, maxCostUsd: effectiveCap }, options)
        : startRun(client, { workflow: definition, inputs: built.inputs, maxCostUsd: effectiveCap }, options);
      handle.runId.then((id) => remember(resumeKey, { runId: id, lastSeq: 0, finished: false, maxCostUsd: effectiveCap })).catch(() => undefined);
      await follow(handle, effectiveCap);
    })();
  };

  /** Cancels the run under way; its stream then ends with run.failed (code cancelled), which ends `active`. */
  const cancel = async (runId: string) => {
    setCancelling(true);
    try {
      await client.routes['runs.cancel']({ id: runId });
    } catch (err) {
      setStreamError(`The run could not be cancelled: ${errorText(err)}`);
    } finally {
      setCancelling(false);
    }
  };

  const dismiss = () => {
    abortRef.current?.abort();
    abortRef.current = null;
    forget(resumeKey);
    dispatch({ type: 'reset' });
    setActive(false);
    setStreamError(null);
    setRefusal(null);
  };

  const onUpload = async (field: FormField, file: File) => {
    setUploading((u) => ({ ...u, [field.id]: true }));
    setValue(field.id, { widget: 'file', mode: 'upload', url: '', artifact: null, fileName: file.name });
    try {
      const artifact = await upload(client, file);
      setValue(field.id, { widget: 'file', mode: 'upload', url: '', artifact, fileName: file.name });
    } catch (err) {
      setFieldErrors((e) => ({ ...e, [field.id]: errorText(err) }));
      setValues((prev) => ({ ...prev, [field.id]: { widget: 'file', mode: 'upload', url: '', artifact: null, fileName: null } }));
    } finally {
      setUploading((u) => ({ ...u, [field.id]: false }));
    }
  };

  const labels = useMemo(() => Object.fromEntries(definition.nodes.map((n) => [n.id, n.label?.trim() || n.id])), [definition]);
  const uses = useMemo(() => Object.fromEntries(definition.nodes.map((n) => [n.id, n.uses])), [definition]);
  const hasRun = run.runId !== null || run.lastSeq > 0 || active;
  // While the run goes, the steps still to come are listed as pending after those under way.
  const timeline = useMemo(() => {
    if (!active || isFinished(run.phase) || run.runId === null) return { steps: run.steps, order: run.order };
    const upcoming = definition.nodes.filter((n) => !['input', 'output', 'const'].includes(n.uses) && !run.steps[n.id]).map((n) => n.id);
    const steps: StepViews = { ...run.steps, ...Object.fromEntries(upcoming.map((id) => [id, { status: 'pending' as const }])) };
    return { steps, order: [...run.order, ...upcoming] };
  }, [active, run, definition]);
  const finished = isFinished(run.phase);

  return (
    <section className="run-panel" aria-labelledby={headingId}>
      <header className="run-panel-head">
        <h2 id={headingId}>Run</h2>
        {hasRun && <StatusBadge phase={active && !finished ? (run.phase === 'starting' ? 'starting' : 'running') : run.phase} />}
        <span className="spacer" />
        <button type="button" className="button subtle small" onClick={onClose} aria-label="Close the run panel">
          ✕
        </button>
      </header>
      <div className="run-panel-body">
        {hasRun && (
          <section className="run-live stack" aria-label="Run progress" aria-live="polite" aria-busy={active && !finished}>
            <CostBar spentUsd={fromMicros(run.costMicros)} capUsd={capUsd} />
            <Elapsed state={run} active={active && !finished} />
            {run.order.length === 0 && active && <p className="muted small">Starting…</p>}
            <StepList steps={timeline.steps} order={timeline.order} labels={labels} uses={uses} compact />
            {(run.phase === 'failed' || run.phase === 'cancelled') && run.error && !Object.values(run.steps).some((v) => v.error?.message === run.error!.message) && (
              <div className="run-error" role="alert">
                <strong>{run.error.code}</strong>
                <p>{run.error.message}</p>
              </div>
            )}
            {streamError && (
              <p className="error-text" role="alert">
                {streamError}
              </p>
            )}
            {run.outputs && (
              <div className="stack">
                <h3 className="run-section-title">Outputs</h3>
                <OutputsList outputs={run.outputs} />
              </div>
            )}
            {run.runId && (
              <Link className="small" to={`/runs/${run.runId}`}>
                Open this run's page
              </Link>
            )}
          </section>
        )}

        <form ref={formRef} id={formId} onSubmit={submit} className={`stack run-form${hasRun ? ' after-run' : ''}`} noValidate aria-label="Run inputs">
          {hasRun && <h3 className="run-section-title">Inputs</h3>}
          {fields.length === 0 ? (
            <p className="muted small">This workflow has no inputs: add an input node to ask for values at run time.</p>
          ) : (
            fields.map((field) => (
              <InputField
                key={field.id}
                field={field}
                value={values[field.id]!}
                error={fieldErrors[field.id] ?? refusal?.byField[field.id]?.join(' ')}
                uploading={!!uploading[field.id]}
                disabled={active}
                onChange={(v) => setValue(field.id, v)}
                onFile={(file) => void onUpload(field, file)}
              />
            ))
          )}
          <label className="field">
            <span>
              Spend cap (USD) <span className="hint">ceiling {formatUsd(CAP_CEILING_USD)}</span>
            </span>
            <input
              type="number"
              inputMode="decimal"
              min={0.000001}
              max={CAP_CEILING_USD}
              step={0.01}
              value={capText}
              disabled={active}
              aria-invalid={capInvalid}
              aria-describedby={capError ? `${headingId}-cap` : undefined}
              onChange={(e) => setCapText(e.target.value)}
            />
            {capError && (
              <span id={`${headingId}-cap`} className={capInvalid ? 'error-text small' : 'hint'}>
                {capError}
              </span>
            )}
          </label>
          {!active && <EstimateLine result={estimate} />}
          {refusal && (
            <div className="run-refusal" role="alert">
              <p className="error-text">{refusal.message}</p>
              {refusal.detail && <p className="error-text small">{refusal.detail}</p>}
              {refusal.other.length > 0 && (
                <ul className="error-text small">
                  {refusal.other.map((m) => (
                    <li key={m}>{m}</li>
                  ))}
                </ul>
              )}
            </div>
          )}
        </form>
      </div>
      <footer className="run-panel-foot">
        <button type="submit" form={formId} className="button primary" disabled={active || busyUploading || capInvalid}>
          {active ? 'Running…' : hasRun ? 'Run again' : 'Run'}
        </button>
        {busyUploading && <span className="muted small">Waiting for the upload…</span>}
        <span className="spacer" />
        {active && !finished && run.runId !== null && (
          <button type="button" className="button danger" onClick={() => void cancel(run.runId!)} disabled={cancelling} aria-label="Cancel this run">
            {cancelling ? 'Cancelling…' : 'Cancel run'}
          </button>
        )}
        {hasRun && !active && (
          <button type="button" className="button subtle" onClick={dismiss}>
            Dismiss result
          </button>
        )}
      </footer>
    </section>
  );
}

export function StatusBadge({ phase }: { phase: string }) {
  return <span className={`badge ${phase === 'starting' ? 'pending' : phase}`}>{phase}</span>;
}

function Elapsed({ state, active }: { state: RunState; active: boolean }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [active]);
  if (state.startedAtMs === null) return null;
  const end = state.finishedAtMs ?? (active ? Math.max(now, state.startedAtMs) : null);
  if (end === null) return null;
  return <p className="muted small run-elapsed">{active ? 'Running for' : 'Took'} {formatMs(Math.max(0, end - state.startedAtMs))}</p>;
}
