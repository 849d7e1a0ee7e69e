import { setTimeout as sleep } from 'node:timers/promises';
import { connect, lastId, type ClientRecord, type ConnectOptions, type Ending, type RequestRecord } from './run-client';

export type { RequestRecord } from './run-client';

/**
 * A fixed pool of clients keeping runs flowing while a scenario breaks things. Unlike
 * `followRun`, each client keeps apart what a scenario must count: every `POST /v1/runs` answer
 * (status, `Retry-After`, time to its head), and a stream cut after `run.started` (a raw cut,
 * counted before the client resumes it with `Last-Event-ID`). Each run carries its own
 * `tag:<prefix>-<n>` so the checker can tie it to the provider fake's calls.
 */

export interface LoadClientRecord extends ClientRecord {
  tag: string;
  requests: RequestRecord[];
  /** Connections that broke after `run.started` and before `[DONE]`, each followed by a resume. */
  cuts: { at: number; why: string }[];
}

export interface LoadOptions {
  url: string;
  token: string;
  concurrency: number;
  /** The run's request body for a tag. */
  body: (tag: string) => unknown;
  tagPrefix: string;
  /** How long one run may take, POST retries and resumes included. */
  runDeadlineMs?: number;
  /** Longest wait for an answer's head; one past it counts as a hung request. Default 15 s. */
  headTimeoutMs?: number;
  /** Silence after which an open stream counts as dead (cut, and resumed). Default 3 s: three of the topology's 1 s heartbeats. */
  silenceMs?: number;
}

export interface Load {
  /** Stops starting runs; resolves with every client's record once the runs in flight end. */
  stop(): Promise<LoadClientRecord[]>;
  /** Runs started so far (finished or not). */
  readonly started: number;
  /** Runs whose stream reached `[DONE]` so far. */
  readonly done: number;
  /** The longest this process itself stalled while the load ran (a timer late by that much): the clients saw nothing meanwhile. */
  readonly maxStallMs: number;
}

/** One run: POST until an answer other than 503/429 (or a stream), then the stream, resumed after every cut. */
export async function runOnce(options: LoadOptions, tag: string): Promise<LoadClientRecord> {
  const startedAt = Date.now();
  const deadline = startedAt + (options.runDeadlineMs ?? 120_000);
  const record: LoadClientRecord = { tag, httpStatus: 0, messages: [], resumes: 0, startedAt, endedAt: startedAt, requests: [], cuts: [] };
  const auth = { Authorization: `Bearer ${options.token}`, Accept: 'text/event-stream' };
  const connectOptions: ConnectOptions = { silenceMs: options.silenceMs ?? 3000, headTimeoutMs: options.headTimeoutMs ?? 15_000 };
  let backoff = 100;
  let last = 'no connection made';
  while (Date.now() < deadline) {
    let ending: Ending;
    if (record.runId === undefined) {
      const request: RequestRecord = { at: Date.now(), status: 0, retryAfter: null, ms: 0 };
      record.requests.push(request);
      const init = { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(options.body(tag)) };
      ending = await connect(`${options.url}/v1/runs`, init, record, connectOptions, deadline, request);
      if (ending.kind === 'broken' && record.runId === undefined && record.messages.length > 0) {
        record.gaveUp = `cut before run.started (${ending.why}): no run id to resume with`;
        break;
      }
    } else {
      record.resumes += 1;
      const after = lastId(record);
      const init = { method: 'GET', headers: { ...auth, ...(after ? { 'Last-Event-ID': after } : {}) } };
      ending = await connect(`${options.url}/v1/runs/${record.runId}/events`, init, record, connectOptions, deadline);
    }
    if (ending.kind === 'done') {
      record.endedAt = Date.now();
      return record;
    }
    if (ending.kind === 'status') {
      last = `answered ${ending.status}`;
      if (![429, 502, 503, 504].includes(ending.status)) {
        record.gaveUp = last;
        break;
      }
    } else {
      last = ending.why;
      if (record.runId !== undefined) record.cuts.push({ at: Date.now(), why: ending.why });
    }
    await sleep(backoff);
    backoff = Math.min(backoff * 2, 1000);
  }
  record.gaveUp ??= `deadline passed; last problem: ${last}`;
  record.endedAt = Date.now();
  return record;
}

/** Starts `concurrency` clients, each running one run after another until `stop()`. */
export function startLoad(options: LoadOptions): Load {
  const records: LoadClientRecord[] = [];
  let stopping = false;
  let started = 0;
  let done = 0;
  const client = async (): Promise<void> => {
    while (!stopping) {
      started += 1;
      const record = await runOnce(options, `${options.tagPrefix}-${started}`);
      records.push(record);
      if (!record.gaveUp) done += 1;
    }
  };
  const clients = Array.from({ length: options.concurrency }, () => client());
  let maxStallMs = 0;
  let tick = Date.now();
  const stallMeter = setInterval(() => {
    maxStallMs = Math.max(maxStallMs, Date.now() - tick - 200);
    tick = Date.now();
  }, 200);
  return {
    async stop() {
      stopping = true;
      await Promise.all(clients);
      clearInterval(stallMeter);
      return records;
    },
    get started() {
      return started;
    },
    get done() {
      return done;
    },
    get maxStallMs() {
      return maxStallMs;
    },
  };
}
