import { useEffect, useState } from 'react';
import type { ArtifactInput, RunEstimateBody, Workflow } from '../../../contract';
import { client } from '../lib/api';
import { formatUsd } from '../lib/format';

/** Wait after the last change before asking: typing in an input asks once. */
const DEBOUNCE_MS = 400;

type EstimateState = { state: 'idle' } | { state: 'loading' } | { state: 'ready'; estimate: RunEstimateBody } | { state: 'error'; message: string };

/**
 * What the run would cost (`runs.estimate`, docs/runs.md "Cost estimates"), asked again whenever
 * the definition, the inputs or the cap change; idle while the inputs are incomplete (null).
 */
export function useRunEstimate(definition: Workflow, inputs: Record<string, ArtifactInput> | null, maxCostUsd: number | null): EstimateState {
  const [result, setResult] = useState<EstimateState>({ state: 'idle' });
  const key = inputs === null || maxCostUsd === null ? null : JSON.stringify([definition, inputs, maxCostUsd]);
  useEffect(() => {
    if (key === null) {
      setResult({ state: 'idle' });
      return;
    }
    const controller = new AbortController();
    setResult((prev) => (prev.state === 'ready' ? prev : { state: 'loading' }));
    const timer = setTimeout(() => {
      client.routes['runs.estimate']({ workflow: definition, ...(inputs && Object.keys(inputs).length > 0 ? { inputs } : {}), maxCostUsd: maxCostUsd! }, { signal: controller.signal }).then(
        (estimate) => setResult({ state: 'ready', estimate }),
        (err: unknown) => {
          if (!controller.signal.aborted) setResult({ state: 'error', message: err instanceof Error ? err.message : String(err) });
        },
      );
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
    // The key stands for the three values it is made of.
  }, [key]);
  return result;
}

/** The estimate as a line above the Run button: the worst case against the cap, the expected cost, the balance. */
export function EstimateLine({ result }: { result: EstimateState }) {
  if (result.state === 'idle') return <p className="muted small run-estimate">Fill in the inputs to see what the run would cost.</p>;
  if (result.state === 'loading') return <p className="muted small run-estimate">Estimating the cost…</p>;
  if (result.state === 'error') return <p className="muted small run-estimate">No estimate: {result.message}</p>;
  const { estimate } = result;
  const worst = estimate.worstCaseUsd === null ? 'worst case known only as it runs' : `worst case ${formatUsd(estimate.worstCaseUsd)}`;
  const expected = estimate.expectedUsd === null ? '' : `, expected ${formatUsd(estimate.expectedUsd)}`;
  const cap = estimate.fitsCap === false ? 'more than the cap: the run stops at it' : estimate.fitsCap ? 'within the cap' : 'at most the cap';
  return (
    <p className={`small run-estimate${estimate.fitsCap === false || !estimate.fitsBalance ? ' warning-text' : ' muted'}`} data-testid="run-estimate">
      Estimate: {worst}
      {expected} ({cap}).{!estimate.fitsBalance && ` Your available balance, ${formatUsd(estimate.availableUsd)}, is not enough.`}
    </p>
  );
}
