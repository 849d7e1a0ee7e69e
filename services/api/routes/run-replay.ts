import type { RunEventSource, SequencedRunEvent, StoredRun } from './run-ports';
import { isFinished, terminalEventOf } from './run-views';

/**
 * A run's event stream as clients get it (`POST /v1/runs`, `runs.node`, `GET /v1/runs/:id/events`).
 * The log in Redis is replayed and followed, but Postgres has the last word: every stream of a
 * finished run ends with a terminal event, even when the log cannot give one (a process died
 * between finishing the run in Postgres and appending the event, or the log expired).
 */

/** How long a stream may stay silent before its run's record is read, unless configured. */
export const DEFAULT_RECORD_CHECK_MS = 10_000;

export interface FollowOptions {
  runId: string;
  /** Send events with a greater seq only. */
  afterSeq: number;
  /** Ends the stream (the client went away). */
  signal: AbortSignal;
  /** Silence after which the run's record is read (and after which a finished run's record ends the stream). */
  checkMs: number;
  /** The run's record, when the caller read it already and it is finished. */
  finished?: StoredRun;
}

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
 * The events to send after `afterSeq` of a run read at `run`:
 *
 * - a finished run without a log (expired after 24 h): its record's terminal event alone, with
 *   seq `afterSeq + 1` (1 for a full replay), since the real position is no longer known;
 * - otherwise the log, then live events, to the terminal event, as `followRunEvents` does.
 */
export function replayEvents(source: RunEventSource, run: StoredRun, options: ReplayOptions): AsyncIterable<SequencedRunEvent> {
  const finished = isFinished(run);
  if (finished && options.lastSeq === 0) return recordedEnding(run, options.afterSeq);
  return followRunEvents(source, options.loadRun, {
    runId: run.id,
    afterSeq: options.afterSeq,
    signal: options.signal,
    checkMs: finished ? options.finishedGraceMs : options.recordCheckMs,
    ...(finished ? { finished: run } : {}),
  });
}

async function* recordedEnding(run: StoredRun, afterSeq: number): AsyncGenerator<SequencedRunEvent> {
  const event = terminalEventOf(run);
  if (event) yield { seq: afterSeq + 1, event };
}

/**
 * The run's events after `afterSeq`, from its log and then live, to its terminal event. Each time
 * the stream is silent for `checkMs`, the run's record is read; once the record is finished and a
 * further `checkMs` passes with no event at all, the record's terminal event ends the stream, with
 * the seq after the last one sent. Two silent checks, not a clock comparison: a writer that
 * finished the run and is about to append its event is never overtaken.
 */
export async function* followRunEvents(
  source: Pick<RunEventSource, 'events'>,
  loadRun: () => Promise<StoredRun | null>,
  options: FollowOptions,
): AsyncGenerator<SequencedRunEvent> {
  // The log's stream gets its own signal, so that it can be ended here as well as by the client.
  const inner = new AbortController();
  const stop = () => inner.abort();
  options.signal.addEventListener('abort', stop, { once: true });
  if (options.signal.aborted) inner.abort();
  const iterator = source.events(options.runId, { afterSeq: options.afterSeq, signal: inner.signal })[Symbol.asyncIterator]();
  let finished = options.finished;
  let last = options.afterSeq;
  let next: Promise<IteratorResult<SequencedRunEvent>> | undefined;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<'idle'>((resolve) => (timer = setTimeout(() => resolve('idle'), options.checkMs)));
      // A next() still pending from a check that found the run unfinished is raced again, not lost.
      next ??= iterator.next();
      // Left pending when the timer wins; whatever it settles to then is of no interest.
      next.catch(() => undefined);
      const step = await Promise.race([next, idle]).finally(() => clearTimeout(timer));
      if (step === 'idle') {
        if (options.signal.aborted) return;
        if (finished) {
          const event = terminalEventOf(finished);
          if (event) yield { seq: last + 1, event };
          return;
        }
        const run = await loadRun();
        if (run && isFinished(run)) finished = run;
        continue;
      }
      next = undefined;
      if (step.done) return;
      last = step.value.seq;
      yield step.value;
    }
  } finally {
    options.signal.removeEventListener('abort', stop);
    // Aborting first settles a next() still pending after the race; return() then releases the subscription.
    inner.abort();
    await iterator.return?.(undefined);
  }
}
