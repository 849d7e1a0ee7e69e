import { isFinished, type StoredRun } from './run-ending';
import type { RunEventSource } from '../ports';
import { RunEventStream } from './run-event-stream';

/** A replay of a stored run (`GET /v1/runs/:id/events`): where it resumes and how long it waits on the record. */
export interface ReplayOptions {
  /** Send events with a greater seq only. */
  afterSeq: number;
  /** Seq of the log's last event (0: no log, never written or expired). */
  lastSeq: number;
  /** Ends the stream (the client went away). */
  signal: AbortSignal;
  /** How long a finished run's stream may stay idle before its record's terminal event ends it. */
  finishedGraceMs: number;
  /** How long an unfinished run's stream may stay idle before the run's record is read again. */
  recordCheckMs: number;
  /** Reads the run's record again. */
  loadRun(): Promise<StoredRun | null>;
}

/**
 * The events to send after `afterSeq` of a run read at `run`: for a finished run without a log
 * (expired after 24 h), its record's terminal event alone, with seq `afterSeq + 1` (1 for a full
 * replay), since the real position is no longer known; otherwise the log, then live events, to the
 * terminal event, as `followRunEvents` gives them.
 */
export function replayEvents(source: Pick<RunEventSource, 'feed'>, run: StoredRun, options: ReplayOptions): RunEventStream {
  const finished = isFinished(run);
  return new RunEventStream(source, options.loadRun, {
    runId: run.id,
    afterSeq: options.afterSeq,
    signal: options.signal,
    checkMs: finished ? options.finishedGraceMs : options.recordCheckMs,
    ...(finished ? { finished: run, logless: options.lastSeq === 0 } : {}),
  });
}
