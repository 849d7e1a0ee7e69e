import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Requests as they are written, for the fault suite: fetch refuses to send a lying
 * Content-Encoding, a body on a chunked request it frames itself, or a path with a broken
 * percent-escape unchanged; Node's http client sends what it is given.
 */

export interface RawRequest {
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface RawAnswer {
  /** 0 when no answer came (then `error` says why). */
  status: number;
  text: string;
  ms: number;
  error?: string;
  /** Sent again on a new connection: the kept-alive one it was first written to was closed under it. */
  retried?: boolean;
}

/** Answers past this many bytes are cut: every answer S1 reads is a short JSON error. */
const MAX_ANSWER_BYTES = 256 * 1024;

/**
 * Sends `req`; when the kept-alive connection it was written to turns out closed before any
 * answer (the race every keep-alive client has with a server closing idle connections), once
 * more, as Node's documentation advises, and marks the answer `retried`.
 */
export async function sendRaw(base: string, req: RawRequest, agent: http.Agent): Promise<RawAnswer> {
  const first = await sendOnce(base, req, agent);
  if (!first.reused || first.status !== 0) return first;
  return { ...(await sendOnce(base, req, agent)), retried: true };
}

function sendOnce(base: string, req: RawRequest, agent: http.Agent): Promise<RawAnswer & { reused?: boolean }> {
  const url = new URL(base);
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (answer: Omit<RawAnswer, 'ms'> & { reused?: boolean }) => {
      if (settled) return;
      settled = true;
      resolve({ ...answer, ms: performance.now() - started });
    };
    const chunked = req.headers['Transfer-Encoding'] === 'chunked';
    const headers = { ...req.headers, ...(req.body && !chunked ? { 'Content-Length': String(req.body.length) } : {}) };
    let request: http.ClientRequest;
    try {
      request = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.target, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
        });
        res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (err) => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), error: err.message }));
      });
    } catch (err) {
      // Node refuses to write some targets at all (unescaped characters): not the service's doing.
      done({ status: 0, text: '', error: `not sent: ${(err as Error).message}` });
      return;
    }
    // The service may answer (413, 401) before it reads the body and close: the answer is what counts.
    request.on('error', (err) => done({ status: 0, text: '', error: err.message, ...(request.reusedSocket ? { reused: true } : {}) }));
    request.end(req.body);
  });
}

/** Runs `work` over `items` with at most `concurrency` at a time, in order of the items. */
export async function inPool<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/**
 * Asks `url` again and again, `intervalMs` apart, until stopped; the latencies it measured. The
 * interval is a sampling rate, not a wait for a condition.
 */
export function latencyProbe(url: string, intervalMs = 20): { stop(): Promise<{ latencies: number[]; failures: string[] }> } {
  const latencies: number[] = [];
  const failures: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
        if (res.status !== 200) failures.push(`status ${res.status}`);
      } catch (err) {
        failures.push((err as Error).message);
      }
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { latencies, failures };
    },
  };
}
