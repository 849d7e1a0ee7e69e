import { formatMs, formatUsd } from '../lib/format';
import { limitWaitedFor } from './run-state';
import type { StepViews } from './step-views';

/** Spent against the cap, as a bar and in numbers. */
export function CostBar({ spentUsd, capUsd }: { spentUsd: number; capUsd: number }) {
  const ratio = capUsd > 0 ? Math.min(1, spentUsd / capUsd) : 0;
  return (
    <div className="cost-bar">
      <div className="row cost-bar-label">
        <span>Spent</span>
        <span className="spacer" />
        <span className="mono">
          {formatUsd(spentUsd)} <span className="muted">of {formatUsd(capUsd)} cap</span>
        </span>
      </div>
      <div className="meter" role="meter" aria-label="Spent of the cap" aria-valuemin={0} aria-valuemax={capUsd} aria-valuenow={spentUsd} aria-valuetext={`${formatUsd(spentUsd)} of ${formatUsd(capUsd)}`}>
        <div className={`meter-fill${ratio > 0.9 ? ' high' : ''}`} style={{ width: `${(ratio * 100).toFixed(2)}%` }} />
      </div>
    </div>
  );
}

/** The run's steps with status, progress, cost and time (the panel's timeline). */
export function StepList({
  steps,
  order,
  labels,
  uses,
  compact = false,
}: {
  steps: StepViews;
  order: readonly string[];
  labels: Readonly<Record<string, string>>;
  uses: Readonly<Record<string, string>>;
  compact?: boolean;
}) {
  if (order.length === 0) return null;
  return (
    <ol className={`step-list${compact ? ' compact' : ''}`} aria-label="Steps">
      {order.map((id) => {
        const step = steps[id];
        if (!step) return null;
        const progress = step.status === 'completed' ? 1 : step.progress;
        return (
          <li key={id} className={`step-item ${step.status}`}>
            <div className="row step-line">
              <span className={`step-dot ${step.status}`} aria-hidden="true" />
              <span className="step-name" title={id}>
                {labels[id] ?? id}
              </span>
              {uses[id] && <span className="muted small mono step-uses">{uses[id]}</span>}
              <span className="spacer" />
              <StepBadge status={step.status} message={step.message} />
            </div>
            {step.status === 'running' && (
              <div
                className={`meter thin${progress === undefined ? ' indeterminate' : ''}`}
                role="progressbar"
                aria-label={`${labels[id] ?? id} progress`}
                aria-valuemin={0}
                aria-valuemax={100}
                aria-valuenow={progress === undefined ? undefined : Math.round(progress * 100)}
              >
                <div className="meter-fill" style={progress === undefined ? undefined : { width: `${Math.round(progress * 100)}%` }} />
              </div>
            )}
            {(step.message && step.status === 'running') || step.costUsd !== undefined || step.ms !== undefined || step.cached ? (
              <div className="row small muted step-meta">
                {step.status === 'running' && step.message && <span className="step-message">{step.message}</span>}
                {step.costUsd !== undefined && <span className="mono">{formatUsd(step.costUsd)}</span>}
                {step.cached && <span className="badge" title="Answered from the output cache: nothing ran, nothing was charged">cached</span>}
                {step.ms !== undefined && <span className="mono">{formatMs(step.ms)}</span>}
              </div>
            ) : null}
            {step.error && (
              <p className="error-text small step-error">
                <strong>{step.error.code}</strong>: {step.error.message}
              </p>
            )}
          </li>
        );
      })}
    </ol>
  );
}

/** A step's status; a running step waiting its turn under a provider's limit says so, and why (its title). */
export function StepBadge({ status, message }: { status: string; message?: string | undefined }) {
  const waitingFor = status === 'running' ? limitWaitedFor(message) : undefined;
  if (waitingFor) {
    return (
      <span className="badge waiting" title={message}>
        waiting for {waitingFor}
      </span>
    );
  }
  return <span className={`badge ${status}`}>{status}</span>;
}
