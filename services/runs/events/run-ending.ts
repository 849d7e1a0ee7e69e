import type { Outputs, RunEvent, RunStatus } from '../../contract';
import type { RunRecord } from '../ports';

/** A run as its stream reads it: the record less what streams never look at. */
export type StoredRun = Pick<RunRecord, 'id' | 'orgId' | 'status' | 'error' | 'outputs'>;

/** Run statuses after which nothing changes and the event stream has ended. */
const FINISHED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Whether the run reached its final status. */
export function isFinished(run: Pick<RunRecord, 'status'>): boolean {
  return FINISHED.has(run.status);
}

/**
 * The terminal event of a finished run, rebuilt from its record for a stream whose log cannot
 * give it: `run.completed` with the stored outputs, or `run.failed` with the stored error (a
 * cancelled run has no event of its own and reads as failed). Null while the run is unfinished.
 */
export function terminalEventOf(run: StoredRun): RunEvent | null {
  switch (run.status) {
    case 'completed':
      return { type: 'run.completed', outputs: (run.outputs ?? {}) as Outputs };
    case 'failed':
      return { type: 'run.failed', error: run.error ?? { code: 'run_failed', message: 'the run failed; its record keeps no further detail' } };
    case 'cancelled':
      return { type: 'run.failed', error: run.error ?? { code: 'cancelled', message: 'the run was cancelled' } };
    case 'pending':
    case 'running':
      return null;
  }
}
