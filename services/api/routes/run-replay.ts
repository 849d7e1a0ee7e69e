import type { RunEventSource, SequencedRunEvent, StoredRun } from './run-ports';
import { isFinished, terminalEventOf } from './run-views';

/**
 * The event stream of `GET /v1/runs/:id/events`. The log in Redis is replayed and followed, but
 * for a finished run Postgres has the last word: every stream of a finished run ends with a
 * terminal event, even when the log cannot give one.
 */

export interface ReplayOptions {
  /** Send events with a greater seq only. */
  afterSeq: number;
  /** Seq of the log's last event (0: no log, never written or expired). */
  lastSeq: number;
  /** Ends the stream (the client went away). */
  signal: AbortSignal;
  /** How long a finished run's stream may stay idle before its record's terminal event ends it. */
  finishedGraceMs: number;
}

/**
 * The events to send after `afterSeq`:
 *
 * - an unfinished run: the log, then live events, to its terminal event;
 * - a finished run without a log (expired after 24 h): its record's terminal event alone, with
 *   seq `afterSeq + 1` (1 for a full replay), since the real position is no longer known;
 * - a finished run with a log: the log; if no terminal event has come after `finishedGraceMs` of
 *   silence (a process died between finishing the run in Postgres and appending the event), the
 *   record's terminal event, with the seq after the last one sent.
 */
export function replayEvents(source: RunEventSource, run: StoredRun, options: ReplayOptions): AsyncIterable<SequencedRunEvent> {
  if (!isFinished(run)) return source.events(run.id, { afterSeq: options.afterSeq, signal: options.signal });
  if (options.lastSeq === 0) return recordedEnding(run, options.afterSeq);
  return endingFromRecordWhenIdle(source, run, options);
}

async function* recordedEnding(run: StoredRun, afterSeq: number): AsyncGenerator<SequencedRunEvent> {
  const event = terminalEventOf(run);
  if (event) yield { seq: afterSeq + 1, event };
}

async function* endingFromRecordWhenIdle(source: RunEventSource, run: StoredRun, options: ReplayOptions): AsyncGenerator<SequencedRunEvent> {
  // The log's stream gets its own signal, so that it can be ended here as well as by the client.
  const inner = new AbortController();
  const stop = () => inner.abort();
  options.signal.addEventListener('abort', stop, { once: true });
  if (options.signal.aborted) inner.abort();
  const iterator = source.events(run.id, { afterSeq: options.afterSeq, signal: inner.signal })[Symbol.asyncIterator]();
  let last = options.afterSeq;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<'idle'>((resolve) => (timer = setTimeout(() => resolve('idle'), options.finishedGraceMs)));
      const next = iterator.next();
      // Left pending when the timer wins; whatever it settles to then is of no interest.
      next.catch(() => undefined);
      const step = await Promise.race([next, idle]).finally(() => clearTimeout(timer));
      if (step === 'idle') {
        const event = terminalEventOf(run);
        if (event) yield { seq: last + 1, event };
        return;
      }
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
