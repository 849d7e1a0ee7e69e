import { ROUTES, TERMINAL_EVENT_TYPES, type Outputs, type Run, type RunError, type RunEvent } from '../../contract';
import { callJson, requestOf } from './call';
import { ConnectionError, RunFailedError, ServiceError } from './errors';
import { readRunStream } from './event-stream';
import { describe, type Transport } from './transport';

/** A run event as the SDK yields it: the event, discriminated on `type`, with its `seq` (1, 2, 3, … per run). */
export type RunEventWithSeq = RunEvent & { seq: number };

/** How a run's stream is resumed when its connection drops. */
export interface ResumeOptions {
  /** Reconnections tried in a row without receiving an event, before falling back to the run record (default 6). */
  maxAttempts?: number;
  /** First wait before reconnecting, doubled each time, with jitter (default 250 ms; at most 8 s). */
  initialDelayMs?: number;
  /**
   * A connection on which nothing at all arrives for this long (the service sends a heartbeat
   * every 15 s by default) is taken for dead and resumed (default 45 s).
   */
  idleTimeoutMs?: number;
  /**
   * Told before each wait to try again: the start sent again (`runId` unknown: the service
   * refused it for a moment, or the connection dropped with an idempotency key) or the stream
   * resumed. For a progress line; the handle goes on whatever it does.
   */
  onRetry?: (retry: RetryNotice) => void;
}

/** What `ResumeOptions.onRetry` is told. */
export interface RetryNotice {
  /** The run, once `run.started` came; undefined while its start is being sent again. */
  runId: string | undefined;
  /** Tries so far without progress, this one included (1 first). */
  attempt: number;
  /** The wait before it. */
  delayMs: number;
  /** Why: the service's answer, or what happened to the connection. */
  reason: string;
}

type Terminal = { type: 'run.completed'; outputs: Outputs } | { type: 'run.failed'; error: RunError };

const DEFAULTS = { maxAttempts: 6, initialDelayMs: 250, idleTimeoutMs: 45_000 };
const MAX_DELAY_MS = 8_000;

/**
 * A run being followed. Its events are read from the moment the handle exists (so the service's
 * stream never waits on a slow consumer) and kept, so `events()` may be iterated by several
 * consumers, each from the first event, and `result()` works whether or not anyone iterates.
 *
 * When the connection drops before the terminal event, the handle reconnects to
 * `GET /v1/runs/:id/events` with `Last-Event-ID` set to the last `seq` it holds, so nothing is
 * missed and nothing repeats; after `maxAttempts` failed reconnections it reads
 * `GET /v1/runs/:id` and, when the run has ended, settles from that record (the events it
 * missed are then not yielded). Aborting the caller's signal stops following: the run itself
 * goes on (`cancel()` stops it).
 */
export class RunHandle {
  /** The run's id, known at `run.started`; rejects when the run was refused before starting (402, 400, …). */
  readonly runId: Promise<string>;
  readonly #events: RunEventWithSeq[] = [];
  #ended: { error?: unknown } | undefined;
  #wake: (() => void)[] = [];
  readonly #terminal: Promise<Terminal>;
  #resolveRunId!: (id: string) => void;
  #rejectRunId!: (err: unknown) => void;
  #knownRunId: string | undefined;
  readonly #transport: Transport;
  readonly #signal: AbortSignal | undefined;
  readonly #resume: Required<Omit<ResumeOptions, 'onRetry'>> & Pick<ResumeOptions, 'onRetry'>;
  readonly #retryOpen: boolean;

  /**
   * @param open the first connection: `POST /v1/runs` (a new run) or the events route of an existing one.
   * @param knownRunId the id, when following an existing run.
   */
  /**
   * @param options.retryOpen `open` carries an idempotency key: when its connection fails before
   * `run.started`, it is sent again (the service attaches to the run it started, if any) as a
   * resume would be, rather than failing with "whether it started is unknown".
   */
  constructor(transport: Transport, open: () => Promise<Response>, options: { signal?: AbortSignal; resume?: ResumeOptions; knownRunId?: string; retryOpen?: boolean } = {}) {
    this.#transport = transport;
    this.#retryOpen = options.retryOpen ?? false;
    this.#signal = options.signal;
    this.#resume = { ...DEFAULTS, ...(options.resume ?? {}) };
    this.runId = new Promise<string>((resolve, reject) => {
      this.#resolveRunId = resolve;
      this.#rejectRunId = reject;
    });
    // Rejections are observed by whoever awaits; these keep an unobserved one from crashing Node.
    this.runId.catch(() => undefined);
    if (options.knownRunId !== undefined) this.#learnRunId(options.knownRunId);
    this.#terminal = this.#follow(open);
    this.#terminal.catch(() => undefined);
  }

  /** Every event of the run, in order, each once, ending after the terminal event; throws what ended following early. */
  async *events(): AsyncGenerator<RunEventWithSeq> {
    for (let i = 0; ; i++) {
      while (i >= this.#events.length) {
        if (this.#ended) {
          if (this.#ended.error !== undefined) throw this.#ended.error;
          return;
        }
        await new Promise<void>((resolve) => this.#wake.push(resolve));
      }
      yield this.#events[i] as RunEventWithSeq;
    }
  }

  /**
   * Cancels the run (`POST /v1/runs/:id/cancel`; only the user who started it may): its steps in
   * flight are stopped, down to the provider's own cancel where it has one, and what they held is
   * released. Resolves with the run's record as it is afterwards: `cancelled`, or as it finished
   * when it ended first. The handle's stream then ends with `run.failed` (code `cancelled`), so
   * `result()` throws a {@link RunFailedError} with that code. Repeating it is harmless. It does
   * not use the handle's own signal: a caller that stopped following may still cancel.
   */
  async cancel(options: { signal?: AbortSignal } = {}): Promise<Run> {
    const id = await this.runId;
    return (await callJson(this.#transport, ROUTES['runs.cancel'], { id }, options.signal ? { signal: options.signal } : {})) as Run;
  }

  /** The run's outputs once it completes; a {@link RunFailedError} when it fails. */
  async result(): Promise<Outputs> {
    const terminal = await this.#terminal;
    if (terminal.type === 'run.completed') return terminal.outputs;
    throw new RunFailedError(await this.runId, terminal.error);
  }

  #learnRunId(id: string): void {
    if (this.#knownRunId !== undefined) return;
    this.#knownRunId = id;
    this.#resolveRunId(id);
  }

  #push(event: RunEventWithSeq): void {
    this.#events.push(event);
    this.#notify();
  }

  #finish(error?: unknown): void {
    this.#ended = error === undefined ? {} : { error };
    if (error !== undefined) this.#rejectRunId(error);
    this.#notify();
  }

  #notify(): void {
    const waiting = this.#wake;
    this.#wake = [];
    for (const wake of waiting) wake();
  }

  async #follow(open: () => Promise<Response>): Promise<Terminal> {
    try {
      const terminal = await this.#followStreams(open);
      this.#finish();
      return terminal;
    } catch (err) {
      this.#finish(err);
      throw err;
    }
  }

  async #followStreams(open: () => Promise<Response>): Promise<Terminal> {
    let lastSeq = 0;
    let failures = 0;
    let connect = open;
    for (;;) {
      let cause: unknown;
      try {
        const terminal = await this.#readOne(connect, (seq) => {
          lastSeq = seq;
          failures = 0;
        }, () => lastSeq);
        if (terminal) return terminal;
        cause = new Error("the stream ended before the run's terminal event");
      } catch (err) {
        if (this.#signal?.aborted) throw this.#signal.reason ?? err;
        // The service refused (404, 401, 402 …): reconnecting would be refused again.
        if (err instanceof ServiceError && err.status >= 400 && !err.retryable) throw err;
        cause = err;
      }
      const runId = this.#knownRunId;
      if (runId === undefined) {
        // The service answered with an error worth retrying (503 unavailable, 429): it started
        // nothing, so the same request may go again, key or no key.
        const answered = cause instanceof ServiceError && cause.status >= 400;
        if ((this.#retryOpen || answered) && failures < this.#resume.maxAttempts) {
          // The same request with the same idempotency key: the run it started, or a new one if it started none.
          await this.#sleep(this.#retryDelay(undefined, failures, cause));
          failures += 1;
          continue;
        }
        if (answered) throw cause;
        const unknown = this.#retryOpen ? `after ${failures + 1} tries with one idempotency key` : 'so whether it started is unknown';
        throw new ConnectionError(`the connection dropped before the run started, ${unknown} (${describe(cause)}); list recent runs with GET /v1/runs`, cause);
      }
      if (failures >= this.#resume.maxAttempts) return this.#settleFromRecord(runId, cause);
      await this.#sleep(this.#retryDelay(runId, failures, cause));
      failures += 1;
      connect = () => this.#transport.send(requestOf(ROUTES['runs.events'], { id: runId }, { signal: this.#signal, headers: { 'last-event-id': String(lastSeq) } }));
    }
  }

  /** Reads one connection to its end; the terminal event's outcome, or null when the stream ended without one. */
  async #readOne(connect: () => Promise<Response>, onEvent: (seq: number) => void, lastSeq: () => number): Promise<Terminal | null> {
    const response = await connect();
    if (!response.body) throw new Error('the answer has no body');
    const idle = new IdleWatch(this.#resume.idleTimeoutMs, response.body);
    try {
      for await (const item of readRunStream(idle.body)) {
        idle.touch();
        if (item.kind !== 'event') continue;
        const { seq, event } = item.value;
        // A replay after Last-Event-ID starts at lastSeq + 1; anything older was already yielded.
        if (seq <= lastSeq()) continue;
        onEvent(seq);
        if (event.type === 'run.started') this.#learnRunId(event.runId);
        this.#push({ ...event, seq });
        if (TERMINAL_EVENT_TYPES.includes(event.type)) return event as Terminal;
      }
      return null;
    } catch (err) {
      if (idle.fired) throw new Error(`nothing arrived for ${this.#resume.idleTimeoutMs} ms (not even a heartbeat)`);
      throw err;
    } finally {
      idle.stop();
    }
  }

  /** After the reconnections failed: the run's record says how it ended, or that it has not. */
  async #settleFromRecord(runId: string, cause: unknown): Promise<Terminal> {
    let run: Run;
    try {
      run = (await callJson(this.#transport, ROUTES['runs.get'], { id: runId }, { signal: this.#signal })) as Run;
    } catch (err) {
      throw new ConnectionError(`lost the event stream of run ${runId} and could not read its record (${describe(err)}); its result: GET /v1/runs/${runId}`, cause);
    }
    if (run.status === 'completed' && run.outputs) return { type: 'run.completed', outputs: run.outputs };
    if (run.status === 'failed' || run.status === 'cancelled') {
      return { type: 'run.failed', error: run.error ?? { code: run.status, message: `the run ${run.status}` } };
    }
    throw new ConnectionError(`lost the event stream of run ${runId} (${describe(cause)}); the run is still ${run.status}: follow it again with GET /v1/runs/${runId}/events`, cause);
  }

  /** The wait before try `failures + 1`, told to `onRetry` first. */
  #retryDelay(runId: string | undefined, failures: number, cause: unknown): number {
    const delayMs = this.#delay(failures);
    try {
      this.#resume.onRetry?.({ runId, attempt: failures + 1, delayMs, reason: describe(cause) });
    } catch {
      // A progress line that failed changes nothing of the run's following.
    }
    return delayMs;
  }

  #delay(failures: number): number {
    const base = Math.min(MAX_DELAY_MS, this.#resume.initialDelayMs * 2 ** failures);
    return base / 2 + Math.random() * (base / 2);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const signal = this.#signal;
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/**
 * Errors a body that stays silent too long: a half-open connection (a peer that vanished without
 * a FIN) would otherwise be waited on forever. The body is wrapped so the error reaches the reader.
 */
class IdleWatch {
  readonly body: ReadableStream<Uint8Array>;
  fired = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #ms: number;

  constructor(ms: number, source: ReadableStream<Uint8Array>) {
    this.#ms = ms;
    this.#reader = source.getReader();
    const reader = this.#reader;
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: async (controller) => {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    this.touch();
  }

  touch(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#fire(), this.#ms);
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }

  #fire(): void {
    this.fired = true;
    this.#controller?.error(new Error('idle'));
    // Ends the pending read of the source and lets go of the connection.
    void this.#reader.cancel().catch(() => undefined);
  }
}
