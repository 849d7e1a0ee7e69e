import type { Batch } from '../../../contract';

/** Whether a batch has ended (nothing of it runs any more). */
export function batchEnded(batch: Pick<Batch, 'status'>): boolean {
  return batch.status === 'completed' || batch.status === 'cancelled';
}

/** Rows ended so far, of the rows that run. */
export function rowsEnded(batch: Pick<Batch, 'rows'>): number {
  return batch.rows.completed + batch.rows.failed + batch.rows.cancelled;
}

/** The widths (percent of the rows that run) of the progress bar's segments. */
export function progressSegments(batch: Pick<Batch, 'rows'>): { completed: number; failed: number; cancelled: number; running: number } {
  const total = Math.max(1, batch.rows.total);
  const pct = (n: number) => (n / total) * 100;
  return { completed: pct(batch.rows.completed), failed: pct(batch.rows.failed), cancelled: pct(batch.rows.cancelled), running: pct(batch.rows.running) };
}

/** Seconds as people read a time left: "12 s", "4 min", "2 h 5 min". */
export function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  const hours = Math.floor(seconds / 3600);
  return `${hours} h ${Math.round((seconds % 3600) / 60)} min`;
}

/** The line under the progress bar: how far, how fast, how long still. */
export function progressLine(batch: Batch): string {
  const parts = [`${rowsEnded(batch).toLocaleString('en-US')} of ${batch.rows.total.toLocaleString('en-US')} rows ended`];
  if (batch.rowsPerSecond !== null) parts.push(`${batch.rowsPerSecond < 10 ? batch.rowsPerSecond.toFixed(1) : Math.round(batch.rowsPerSecond)} rows/s`);
  if (!batchEnded(batch) && batch.etaSeconds !== null) parts.push(`about ${formatSeconds(batch.etaSeconds)} left`);
  return parts.join(' · ');
}

/** Whether Retry failed applies: the batch ended with rows that did not complete. */
export function canRetry(batch: Batch): boolean {
  return batchEnded(batch) && batch.rows.failed + batch.rows.cancelled > 0;
}

/**
 * Whether the batch's cap, not its concurrency, bounds its rows in flight: each row in flight holds
 * its whole cap against the batch's, so rows wait for room while fewer than `concurrency` run.
 */
export function capBindsConcurrency(batch: Batch): boolean {
  if (batchEnded(batch) || batch.rows.pending === 0 || batch.rows.running >= batch.concurrency) return false;
  const room = Math.round((batch.maxCostUsd - batch.spentUsd - batch.heldUsd) * 1e6);
  return room < Math.round(batch.rowMaxCostUsd * 1e6);
}
