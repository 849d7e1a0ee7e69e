import type { Outputs, Run, RunEvent, RunStatus, RunSummary, StepRecord } from '../../contract';
import { microsToUsd } from '../../engine/money';
import type { StoredRun, StoredRunSummary, StoredStep } from './run-ports';

/** Run statuses after which nothing changes and the event stream has ended. */
const FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

const iso = (time: Date | null): string | null => (time ? time.toISOString() : null);

/** Whether the run reached its final status. */
export function isFinished(run: StoredRunSummary): boolean {
  return FINISHED.has(run.status);
}

function stepBody(step: StoredStep): StepRecord {
  const body: StepRecord = { nodeId: step.nodeId, status: step.status, costUsd: microsToUsd(step.costMicros), ms: step.ms };
  if (step.error) body.error = { code: step.error.code, message: step.error.message };
  return body;
}

/** A run as `GET /v1/runs` lists it. */
export function runSummaryBody(run: StoredRunSummary): RunSummary {
  return {
    id: run.id,
    status: run.status,
    error: run.error ? { code: run.error.code, message: run.error.message } : null,
    costUsd: microsToUsd(run.spentMicros),
    maxCostUsd: microsToUsd(run.capMicros),
    createdAt: run.createdAt.toISOString(),
    finishedAt: iso(run.finishedAt),
  };
}

/**
 * A run as `GET /v1/runs/:id` answers it. Outputs are passed through exactly as stored at
 * completion (the map the `run.completed` event carried); any other status has none.
 */
export function runBody(run: StoredRun): Run {
  const { id, status, error, costUsd, maxCostUsd, createdAt, finishedAt } = runSummaryBody(run);
  return {
    id,
    status,
    steps: run.steps.map(stepBody),
    outputs: status === 'completed' ? completedOutputs(run) : null,
    error,
    costUsd,
    maxCostUsd,
    createdAt,
    startedAt: iso(run.startedAt),
    finishedAt,
  };
}

function completedOutputs(run: StoredRun): Outputs {
  return (run.outputs ?? {}) as Outputs;
}

/**
 * The terminal event of a finished run, rebuilt from its record for a replay whose event log has
 * expired: `run.completed` with the stored outputs, or `run.failed` with the stored error (a
 * cancelled run has no event of its own and reads as failed). Null while the run is unfinished.
 */
export function terminalEventOf(run: StoredRun): RunEvent | null {
  switch (run.status) {
    case 'completed':
      return { type: 'run.completed', outputs: completedOutputs(run) };
    case 'failed':
      return { type: 'run.failed', error: run.error ?? { code: 'run_failed', message: 'the run failed; its record keeps no further detail' } };
    case 'cancelled':
      return { type: 'run.failed', error: run.error ?? { code: 'cancelled', message: 'the run was cancelled' } };
    case 'pending':
    case 'running':
      return null;
  }
}
