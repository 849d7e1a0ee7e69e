import type { Outputs, Run, RunSummary, StepRecord, Workflow } from '../../contract';
import { microsToUsd } from '../../engine/money';
import type { RunRecord, RunStepRecord, RunSummaryRecord } from '../../store';

type StepView = Pick<RunStepRecord, 'nodeId' | 'status' | 'costMicros' | 'ms' | 'error'>;
/** What a run body shows of a run record. */
export type RunView = RunSummaryRecord & Pick<RunRecord, 'outputs' | 'definition' | 'deadlineAt' | 'webhook'> & { steps: readonly StepView[] };

const iso = (time: Date | null): string | null => (time ? time.toISOString() : null);

function stepBody(step: StepView): StepRecord {
  const body: StepRecord = { nodeId: step.nodeId, status: step.status, costUsd: microsToUsd(step.costMicros), ms: step.ms };
  if (step.error) body.error = { code: step.error.code, message: step.error.message };
  return body;
}

/** A run as `GET /v1/runs` lists it. */
export function runSummaryBody(run: RunSummaryRecord): RunSummary {
  return {
    id: run.id,
    status: run.status,
    error: run.error ? { code: run.error.code, message: run.error.message } : null,
    costUsd: microsToUsd(run.spentMicros),
    maxCostUsd: microsToUsd(run.capMicros),
    createdAt: run.createdAt.toISOString(),
    finishedAt: iso(run.finishedAt),
    workflowRef: run.workflowRef,
    workflowId: run.workflowId,
    workflowName: run.workflowName,
    batchId: run.batchId,
    scheduleId: run.scheduleId,
  };
}

/**
 * A run as `GET /v1/runs/:id` answers it. Outputs are passed through exactly as stored at
 * completion (the map the `run.completed` event carried); any other status has none.
 */
export function runBody(run: RunView): Run {
  const { id, status, error, costUsd, maxCostUsd, createdAt, finishedAt, workflowRef, workflowId, workflowName, batchId, scheduleId } = runSummaryBody(run);
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
    deadlineAt: iso(run.deadlineAt),
    webhook: run.webhook && {
      url: run.webhook.url,
      events: run.webhook.events,
      deliveries: run.webhook.deliveries.map((d) => ({
        seq: d.seq,
        type: d.eventType,
        status: d.status,
        attempts: d.attempts,
        lastStatusCode: d.lastStatusCode,
        lastError: d.lastError,
        lastAttemptAt: iso(d.lastAttemptAt),
        nextAttemptAt: iso(d.nextAttemptAt),
        deliveredAt: iso(d.deliveredAt),
      })),
    },
    workflowRef,
    workflowId,
    workflowName,
    batchId,
    scheduleId,
    // Stored as it ran: the definition checked (and, for a workflowRef, resolved) at start.
    workflow: run.definition as Workflow,
  };
}

function completedOutputs(run: RunView): Outputs {
  return (run.outputs ?? {}) as Outputs;
}
