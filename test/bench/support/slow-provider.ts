import type http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorReply, openAiStream, startLlmFake, type LlmFake, type RecordedRequest } from '../../support/llm-fake';

/**
 * An OpenAI-compatible chat API that takes its time, for the provider benches (B11–B13): every
 * chat completion is answered `latencyMs` after it arrived, streamed or in one JSON body as the
 * request asks, with the usage it reports; it counts the calls it holds open at once, notes each
 * arrival, and refuses calls with 429 as its policy says. Built on the tests' fake
 * (test/support/llm-fake.ts), which speaks the wire format.
 */
export type RefusalPolicy =
  /** Answers every call. */
  | { kind: 'none' }
  /** 429 to every second call (the 2nd, 4th, …), with `Retry-After`. */
  | { kind: 'every-other'; retryAfterS: number }
  /** 429 to a call arriving when `perSecond` calls were already answered (accepted) in the second before it: a provider's own limit. */
  | { kind: 'above-rate'; perSecond: number; retryAfterS: number };

export interface SlowProviderOptions {
  latencyMs: number;
  text: string;
  usage: { prompt: number; completion: number };
  refuse: RefusalPolicy;
}

export interface SlowProvider {
  /** The API's base URL, up to and including `/v1` (OPENAI_BASE_URL). */
  baseUrl: string;
  /** Arrival of every call, refused ones included, in `performance.now()` milliseconds. */
  readonly arrivals: readonly number[];
  /** Arrival of every refused call. */
  readonly refusals: readonly number[];
  /** Calls answered with a whole completion (the client read it to its end). */
  readonly answered: number;
  /** Calls held open right now (arrived, answer not ended). */
  readonly inFlight: number;
  /** The most calls held open at once since the last reset. */
  readonly peakInFlight: number;
  /** Forgets every count (between a warm-up and the measured phase). */
  reset(): void;
  /** Holds every call from now on until `letGo` (B11's memory phase: every step in flight at once). */
  hold(): void;
  /** Answers the held calls (at once, or when their latency is up) and stops holding. */
  letGo(): void;
  close(): Promise<void>;
}

export async function startSlowProvider(options: SlowProviderOptions): Promise<SlowProvider> {
  let arrivals: number[] = [];
  let refusals: number[] = [];
  // Arrival times of accepted calls, for the `above-rate` policy's sliding second.
  let accepted: number[] = [];
  let answered = 0;
  const open = new Set<http.ServerResponse>();
  let peakInFlight = 0;
  let gate: { opened: Promise<void>; open(): void } | undefined;
  const stream = openAiStream([options.text], options.usage);
  const refusal = (retryAfterS: number) => errorReply(429, { message: 'Rate limit reached for requests', type: 'requests' }, { 'retry-after': String(retryAfterS) });

  const refuses = (now: number): number | undefined => {
    const policy = options.refuse;
    if (policy.kind === 'every-other') return arrivals.length % 2 === 0 ? policy.retryAfterS : undefined;
    if (policy.kind === 'above-rate') {
      while (accepted.length > 0 && accepted[0]! <= now - 1000) accepted.shift();
      return accepted.length >= policy.perSecond ? policy.retryAfterS : undefined;
    }
    return undefined;
  };

  const answer = async (res: http.ServerResponse, req: RecordedRequest): Promise<void> => {
    const now = performance.now();
    arrivals.push(now);
    const retryAfterS = refuses(now);
    if (retryAfterS !== undefined) {
      refusals.push(now);
      return refusal(retryAfterS)(res, req);
    }
    accepted.push(now);
    open.add(res);
    peakInFlight = Math.max(peakInFlight, open.size);
    res.once('close', () => open.delete(res));
    res.once('finish', () => void answered++);
    await Promise.all([sleep(options.latencyMs), gate?.opened]);
    if (req.body.stream === true) return stream(res, req);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-slow',
        object: 'chat.completion',
        created: 1_700_000_000,
        model: req.body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: options.text }, finish_reason: 'stop' }],
        usage: { prompt_tokens: options.usage.prompt, completion_tokens: options.usage.completion, total_tokens: options.usage.prompt + options.usage.completion },
      }),
    );
  };

  const fake: LlmFake = await startLlmFake(answer);
  return {
    baseUrl: `${fake.url}/v1`,
    get arrivals() {
      return arrivals;
    },
    get refusals() {
      return refusals;
    },
    get answered() {
      return answered;
    },
    get inFlight() {
      return open.size;
    },
    get peakInFlight() {
      return peakInFlight;
    },
    reset() {
      arrivals = [];
      refusals = [];
      accepted = [];
      answered = 0;
      peakInFlight = open.size;
      // The recorded requests (headers and bodies) would otherwise pile up over the phases.
      fake.requests.length = 0;
    },
    hold() {
      let open = () => undefined as void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      gate = { opened, open };
    },
    letGo() {
      gate?.open();
      gate = undefined;
    },
    close: () => fake.close(),
  };
}

/** The most of `times` (ms, any order) inside any window of `windowMs` (sliding: every window that starts at one of them). */
export function maxInSlidingWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let start = 0, end = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/** How many of `times` arrived within `windowMs` after an earlier one of `after` (calls sent inside a pause a 429 asked for). */
export function countWithin(times: readonly number[], after: readonly number[], windowMs: number): number {
  const marks = [...after].sort((a, b) => a - b);
  let count = 0;
  for (const t of times) {
    // The latest mark strictly before t (binary search).
    let lo = 0;
    let hi = marks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (marks[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && t - marks[lo - 1]! < windowMs) count++;
  }
  return count;
}
