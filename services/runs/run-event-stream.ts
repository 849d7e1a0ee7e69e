import { TERMINAL_EVENT_TYPES, type Outputs, type RunEvent, type RunStatus, type SequencedEvent } from '../contract';
import type { RunRecord } from '../store';

/**
 * A run's event stream as clients get it (`POST /v1/runs`, `runs.node`, `GET /v1/runs/:id/events`).
 * The log in Redis is replayed and followed, but Postgres has the last word: every stream of a
 * finished run ends with a terminal event, even when the log cannot give one (a process died
 * between finishing the run in Postgres and appending the event, or the log expired).
 */

/** A run as its stream reads it: the record less what streams never look at. */
export type StoredRun = Pick<RunRecord, 'id' | 'orgId' | 'status' | 'error' | 'outputs'>;

/** Port: a run's event log (the run event bus), replayed and then followed live. */
export interface RunEventSource {
  /**
   * Events with seq > `afterSeq`, in order and each once; ends after the terminal event, at once
   * when resumed at or after it, or when `signal` aborts. Its `return()` ends it at once, also
   * while a `next()` waits for an event (an async generator's would wait behind that `next()`).
   */
  events(runId: string, options: { afterSeq?: number; signal?: AbortSignal }): AsyncIterable<SequencedEvent>;
  /** Seq of the run's last logged event; 0 when its log never existed or has expired. */
  lastSeq(runId: string): Promise<number>;
}

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
  /** Told about each failure the stream rides out (a log stream or a record read); for logging. */
  onTrouble?: (err: unknown, what: 'log' | 'record') => void;
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
export function replayEvents(source: RunEventSource, run: StoredRun, options: ReplayOptions): AsyncIterable<SequencedEvent> {
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

async function* recordedEnding(run: StoredRun, afterSeq: number): AsyncGenerator<SequencedEvent> {
  const event = terminalEventOf(run);
  if (event) yield { seq: afterSeq + 1, event };
}

/** First pause before a broken log stream (Redis restarting, unreachable) is opened again. */
const RETRY_FIRST_MS = 100;
/** Longest such pause; heartbeats go on meanwhile, and the record checks too. */
const RETRY_MAX_MS = 2_000;

type Wake =
  | { kind: 'step'; step: IteratorResult<SequencedEvent> }
  | { kind: 'logFailed'; err: unknown }
  | { kind: 'record'; run: StoredRun | null }
  | { kind: 'recordFailed'; err: unknown }
  | { kind: 'timer' }
  | { kind: 'aborted' };

/**
 * What wakes one stream, delivered in arrival order. Each source (the log's pending read, the
 * record check, the one timer, the client's abort) delivers here once per settlement, so waiting
 * costs one promise and nothing stays behind on a promise that outlives the wait: racing the
 * long-lived ones afresh for every event left a reaction on each per event, for as long as the
 * stream (or, on a shared never-settling promise, the process) lived.
 *
 * It is also the client signal's abort listener (`handleEvent`). Callbacks kept per stream are
 * methods or unnamed arrows on purpose: tsx (the service's runtime) names every function bound to
 * a name, and a named closure carries a property dictionary of about 256 bytes.
 */
class Wakes {
  private readonly queued: Wake[] = [];
  private waiting: ((wake: Wake) => void) | undefined;
  /** The client's signal aborted (read here per event: AbortSignal's own getter is not cheap). */
  aborted = false;

  deliver(wake: Wake): void {
    const waiting = this.waiting;
    if (!waiting) {
      this.queued.push(wake);
      return;
    }
    this.waiting = undefined;
    waiting(wake);
  }

  next(): Wake | Promise<Wake> {
    return this.queued.shift() ?? new Promise<Wake>((resolve) => (this.waiting = resolve));
  }

  /** The client's signal aborted. */
  handleEvent(): void {
    this.aborted = true;
    this.deliver({ kind: 'aborted' });
  }
}

/**
 * The run's events after `afterSeq`, from its log and then live, to its terminal event.
 *
 * Nothing but the terminal event (or the client going away) ends it: a failed log stream (Redis
 * restarting or unreachable) is opened again from the last seq sent, after a pause that doubles
 * up to {@link RETRY_MAX_MS}; a failed record read (Postgres down, its pool busy) is a check that
 * found nothing. Each time the stream is silent for `checkMs`, the run's record is read (the
 * read runs beside the log, so a slow one delays no event); once the record is finished and a
 * further `checkMs` passes with no event at all, the record's terminal event ends the stream,
 * with the seq after the last one sent. Two silent checks, not a clock comparison: a writer that
 * finished the run and is about to append its event is never overtaken.
 */
export async function* followRunEvents(
  source: Pick<RunEventSource, 'events'>,
  loadRun: () => Promise<StoredRun | null>,
  options: FollowOptions,
): AsyncGenerator<SequencedEvent> {
  const { signal } = options;
  const wakes = new Wakes();
  signal.addEventListener('abort', wakes, { once: true });
  wakes.aborted = signal.aborted;
  // One timer, moved only earlier: an event pushes the silence deadline later without touching it,
  // and a timer that fires before the deadline it was set for is set again (a timer per event was
  // most of a stream's cost per event).
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  let iterator: AsyncIterator<SequencedEvent> | undefined;
  // A log read and a record read under way survive a wake-up by something else: never lost.
  let reading = false;
  let checking = false;
  let finished = options.finished;
  let last = options.afterSeq;
  // The type of the last event this stream gave, and whether the log has ended without its terminal one.
  let lastType: RunEvent['type'] | undefined;
  let logEnded = false;
  let failures = 0;
  let retryAt = 0;
  let quietUntil = Date.now() + options.checkMs;
  try {
    for (;;) {
      if (wakes.aborted) return;
      // The log's stream ends with the client's signal, or by its return() when it ends here.
      if (!iterator && !logEnded && Date.now() >= retryAt) iterator = openLog(source, options.runId, last, signal);
      if (iterator && !reading) {
        reading = true;
        iterator.next().then(
          (step) => wakes.deliver({ kind: 'step', step }),
          (err: unknown) => wakes.deliver({ kind: 'logFailed', err }),
        );
      }
      // While a record read is under way, silence is not measured; while the log is down, its retry is due.
      const quietAt = checking ? Infinity : quietUntil;
      const wakeAt = reading || logEnded ? quietAt : Math.min(quietAt, retryAt);
      if (wakeAt < timerAt) {
        clearTimeout(timer);
        timerAt = wakeAt;
        timer = setTimeout(() => {
          timer = undefined;
          timerAt = Infinity;
          wakes.deliver({ kind: 'timer' });
        }, Math.max(0, wakeAt - Date.now()));
      }
      const wake = await wakes.next();
      switch (wake.kind) {
        case 'aborted':
          return;
        case 'step':
          reading = false;
          // The log's stream ended because the client went away: not an ending of the log.
          if (wakes.aborted) return;
          if (wake.step.done) {
            // The log ends after a terminal event, or at once when resumed at it. Ended after an
            // event of ours that was not terminal, it ended on a terminal event at a seq this
            // stream had already used for another event: Redis lost the log and the run's events
            // went on in a new one. Its terminal event then comes from the run's record, now.
            if (lastType === undefined || TERMINAL_EVENT_TYPES.includes(lastType)) return;
            iterator = undefined;
            logEnded = true;
            quietUntil = Date.now();
            break;
          }
          failures = 0;
          last = wake.step.value.seq;
          lastType = wake.step.value.event.type;
          quietUntil = Date.now() + options.checkMs;
          yield wake.step.value;
          break;
        case 'logFailed':
          // The failed stream has already released its subscription (its own finally ran).
          reading = false;
          iterator = undefined;
          failures++;
          retryAt = Date.now() + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1));
          options.onTrouble?.(wake.err, 'log');
          break;
        case 'record':
          checking = false;
          if (wake.run && isFinished(wake.run)) finished = wake.run;
          quietUntil = Date.now() + options.checkMs;
          break;
        case 'recordFailed':
          checking = false;
          quietUntil = Date.now() + options.checkMs;
          options.onTrouble?.(wake.err, 'record');
          break;
        case 'timer':
          // The timer may be one set for an earlier deadline (or a log retry): only silence counts.
          if (checking || Date.now() < quietUntil) break;
          if (finished) {
            const event = terminalEventOf(finished);
            if (event) yield { seq: last + 1, event };
            return;
          }
          checking = true;
          Promise.resolve()
            .then(loadRun)
            .then(
              (run) => wakes.deliver({ kind: 'record', run }),
              (err: unknown) => wakes.deliver({ kind: 'recordFailed', err }),
            );
          break;
      }
    }
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', wakes);
    // Ends a next() still pending at once (the port's promise) and releases the subscription.
    await iterator?.return?.(undefined).catch(() => undefined);
  }
}

/** The log's stream from `afterSeq`; a source that throws as it is called fails like one whose first read fails. */
function openLog(source: Pick<RunEventSource, 'events'>, runId: string, afterSeq: number, signal: AbortSignal): AsyncIterator<SequencedEvent> {
  try {
    return source.events(runId, { afterSeq, signal })[Symbol.asyncIterator]();
  } catch (err) {
    return { next: () => Promise.reject(err) };
  }
}
