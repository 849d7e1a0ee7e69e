import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';

/**
 * A client that never gives up on a run's stream: it opens `POST /v1/runs`, records every SSE
 * message with its `id:` exactly as it arrived (duplicates included: the checker must see them),
 * and whenever the stream breaks before `[DONE]` (reset, EOF, error, or silence past three
 * heartbeats) it resumes with `GET /v1/runs/:id/events` and `Last-Event-ID` on whatever API the
 * base URL reaches, with backoff, until `[DONE]` or the deadline. 503s and refused connections
 * are retried too.
 */

export interface RecordedMessage {
  /** The message's `id:` (undefined for `[DONE]` and anything sent without one). */
  id: string | undefined;
  data: string;
}

export interface ClientRecord {
  runId?: string;
  /** HTTP status of the first answer (0: no answer at all, e.g. the connection was refused every time). */
  httpStatus: number;
  /** Every message in arrival order, over every connection. */
  messages: RecordedMessage[];
  /** Connections opened after the first one to go on with the run (resumes and POST retries). */
  resumes: number;
  /** Set when the client stopped without `[DONE]`, saying why. */
  gaveUp?: string;
  startedAt: number;
  endedAt: number;
}

export interface FollowOptions {
  /** When to stop trying, ms from the call. */
  deadlineMs: number;
  /** The service's SSE_HEARTBEAT_MS: three of them without a byte mean the connection is dead. Default 1000. */
  heartbeatMs?: number;
  /** How long to wait for an answer's head (before heartbeats can flow). Default 10 s. */
  headTimeoutMs?: number;
  /** First pause before a retry, doubled up to `maxBackoffMs`. Defaults 50 and 1000. */
  backoffMs?: number;
  maxBackoffMs?: number;
  onEvent?: (message: RecordedMessage) => void;
  /**
   * Sent as `Idempotency-Key` with the POST: a POST cut before `run.started` is then sent again
   * (the service attaches to the run it started, if any) instead of giving up.
   */
  idempotencyKey?: string;
}

/** How one connection ended. */
export type Ending = { kind: 'done' } | { kind: 'broken'; why: string } | { kind: 'status'; status: number; body: string };

/** What one connection needs of the follower's options. */
export interface ConnectOptions extends Pick<FollowOptions, 'heartbeatMs' | 'headTimeoutMs' | 'onEvent'> {
  /** Silence after which an open stream counts as dead; default three heartbeats. */
  silenceMs?: number;
}

/** One `POST /v1/runs` attempt, as a load client counts it. */
export interface RequestRecord {
  at: number;
  /** 0: no answer (refused, reset, or no head before the head timeout). */
  status: number;
  retryAfter: string | null;
  /** Time to the answer's head (or to giving up on it). */
  ms: number;
  /** Why no answer came, when none did. */
  error?: string;
}

function headers(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
}

/** The id of the last message received with one: where a resume starts. */
export function lastId(record: Pick<ClientRecord, 'messages'>): string | undefined {
  for (let i = record.messages.length - 1; i >= 0; i -= 1) {
    const id = record.messages[i]!.id;
    if (id !== undefined && id !== '') return id;
  }
  return undefined;
}

function errorText(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/**
 * One connection: sends `init` and reads its stream into `record` until `[DONE]`, a break, or
 * silence; an answer other than a 200 stream is returned as its status. `request`, when given,
 * is filled with the answer's head (status, `Retry-After`, time) or why none came.
 */
export async function connect(url: string, init: RequestInit, record: ClientRecord, options: ConnectOptions, deadline: number, request?: RequestRecord): Promise<Ending> {
  const silenceMs = options.silenceMs ?? 3 * (options.heartbeatMs ?? 1000);
  const controller = new AbortController();
  let silent = false;
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = (limitMs = silenceMs): void => {
    clearTimeout(timer);
    const wait = Math.min(limitMs, Math.max(0, deadline - Date.now()));
    timer = setTimeout(() => {
      // Timers run before pending reads: after a stall of this process, bytes that did arrive
      // are read first (setImmediate runs after the poll phase), and count as no silence.
      const seen = bytes;
      setImmediate(() => {
        if (bytes !== seen && !controller.signal.aborted) return arm(limitMs);
        silent = true;
        controller.abort();
      });
    }, wait);
  };
  const opened = Date.now();
  arm(options.headTimeoutMs ?? 10_000);
  try {
    const res = await fetch(url, { ...init, signal: controller.signal });
    if (request) Object.assign(request, { status: res.status, retryAfter: res.headers.get('retry-after'), ms: Date.now() - opened });
    if (record.httpStatus === 0) record.httpStatus = res.status;
    if (res.status !== 200 || !res.body) {
      const body = await res.text().catch(() => '');
      return { kind: 'status', status: res.status, body: body.slice(0, 300) };
    }
    arm();
    let done = false;
    const parser = createParser({
      onEvent: ({ id, data }) => {
        const message = { id, data };
        record.messages.push(message);
        if (data === '[DONE]') done = true;
        if (record.runId === undefined && data.includes('"run.started"')) {
          try {
            record.runId = (JSON.parse(data) as { runId?: string }).runId;
          } catch {
            // A malformed event is the checker's to report; the record keeps it as it came.
          }
        }
        options.onEvent?.(message);
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      arm();
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (done) return { kind: 'done' };
    }
    parser.feed(`${decoder.decode()}\n\n`);
    return done ? { kind: 'done' } : { kind: 'broken', why: 'the stream ended before [DONE]' };
  } catch (err) {
    const headless = request ? request.status === 0 : record.httpStatus === 0;
    const why = silent ? (headless ? 'no answer in time' : `no byte for ${silenceMs} ms`) : errorText(err);
    if (request && request.status === 0) Object.assign(request, { ms: Date.now() - opened, error: why });
    return { kind: 'broken', why };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** Follows one run from `POST /v1/runs` to `[DONE]`, resuming as often as it takes before the deadline. */
export async function followRun(baseUrl: string, token: string, body: unknown, options: FollowOptions): Promise<ClientRecord> {
  const startedAt = Date.now();
  const deadline = startedAt + options.deadlineMs;
  const record: ClientRecord = { httpStatus: 0, messages: [], resumes: 0, startedAt, endedAt: startedAt };
  const base = baseUrl.replace(/\/+$/, '');
  let backoff = options.backoffMs ?? 50;
  let connections = 0;
  let lastProblem = 'no connection made';
  for (;;) {
    if (Date.now() >= deadline) {
      record.gaveUp = `deadline of ${options.deadlineMs} ms passed; last problem: ${lastProblem}`;
      break;
    }
    let ending: Ending;
    if (record.runId === undefined) {
      const key: Record<string, string> = options.idempotencyKey === undefined ? {} : { 'Idempotency-Key': options.idempotencyKey };
      const init: RequestInit = { method: 'POST', headers: { ...headers(token), 'Content-Type': 'application/json', ...key }, body: JSON.stringify(body) };
      ending = await connect(`${base}/v1/runs`, init, record, options, deadline);
    } else {
      const after = lastId(record);
      const init: RequestInit = { method: 'GET', headers: { ...headers(token), ...(after === undefined ? {} : { 'Last-Event-ID': after }) } };
      ending = await connect(`${base}/v1/runs/${record.runId}/events`, init, record, options, deadline);
    }
    connections += 1;
    if (connections > 1) record.resumes += 1;
    if (ending.kind === 'done') break;
    const cutBeforeStart = record.runId === undefined;
    if (ending.kind === 'status') {
      lastProblem = `answered ${ending.status}: ${ending.body}`;
      // 503 (and a gateway's 502/504) created no run and is worth another try, as is 429 (a
      // stream slot of a cut connection not freed yet); anything else is the run's answer.
      if (![429, 502, 503, 504].includes(ending.status)) {
        record.gaveUp = lastProblem;
        break;
      }
    } else {
      lastProblem = ending.why;
        // A refused connection carried no request; any other break before run.started may have
      // created a run that cannot be found again: without a key, sending the POST again could run it twice.
      // With an idempotency key the POST is sent again: it attaches to the run it may have started.
      if (cutBeforeStart && options.idempotencyKey === undefined && !(ending.why === 'ECONNREFUSED' && record.messages.length === 0)) {
        record.gaveUp = `the stream was cut before run.started (${ending.why}): no run id to resume with`;
        break;
      }
    }
    await sleep(Math.min(backoff, Math.max(0, deadline - Date.now())));
    backoff = Math.min(backoff * 2, options.maxBackoffMs ?? 1000);
  }
  record.endedAt = Date.now();
  return record;
}
