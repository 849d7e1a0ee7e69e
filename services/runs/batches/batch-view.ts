import type { Batch, BatchRow } from '../../contract';
import { microsToUsd } from '../../engine';
import type { BatchRecord, BatchRowRecord } from '../ports';

/** A batch record as the contract shows it: money in USD, the rate and the time left worked out. */
export function batchView(record: BatchRecord): Batch {
  const elapsedSeconds = Math.max(0, (record.readAt.getTime() - record.attemptStartedAt.getTime()) / 1000);
  const rate = record.endedThisAttempt > 0 && elapsedSeconds > 0 ? record.endedThisAttempt / elapsedSeconds : null;
  const left = record.pendingRows + record.runningRows;
  const ended = record.status === 'completed' || record.status === 'cancelled';
  return {
    id: record.id,
    status: record.status,
    attempt: record.attempt,
    workflowRef: record.workflowRef,
    workflowId: record.workflowId,
    workflowVersionId: record.workflowVersionId,
    rows: {
      total: record.rowCount,
      pending: record.pendingRows,
      running: record.runningRows,
      completed: record.completedRows,
      failed: record.failedRows,
      cancelled: record.cancelledRows,
      skipped: record.skippedCount,
    },
    maxCostUsd: microsToUsd(record.capMicros),
    rowMaxCostUsd: microsToUsd(record.rowCapMicros),
    spentUsd: microsToUsd(record.spentMicros),
    heldUsd: microsToUsd(record.heldMicros),
    concurrency: record.concurrency,
    rowsPerSecond: rate === null ? null : Math.round(rate * 100) / 100,
    etaSeconds: ended || rate === null ? null : Math.round(left / rate),
    stopReason: record.stopReason,
    skippedRows: record.skippedRows,
    deadlineAt: record.deadlineAt?.toISOString() ?? null,
    webhook: record.webhookUrl === null ? null : { url: record.webhookUrl, state: (record.webhookState ?? 'waiting') as 'waiting' | 'pending' | 'delivered' | 'failed', attempts: record.webhookAttempts },
    createdAt: record.createdAt.toISOString(),
    attemptStartedAt: record.attemptStartedAt.toISOString(),
    finishedAt: record.finishedAt?.toISOString() ?? null,
  };
}

/** A batch's row as the contract shows it. */
export function batchRowView(row: BatchRowRecord): BatchRow {
  return {
    row: row.row,
    status: row.status,
    runId: row.runId,
    attempts: row.attempts,
    costUsd: microsToUsd(row.costMicros),
    outputs: (row.outputs as BatchRow['outputs']) ?? null,
    error: row.error,
    finishedAt: row.finishedAt?.toISOString() ?? null,
  };
}
