import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { modelPrices, tokenCostMicros, type ModelPrice } from '../../../services/nodes/providers/llm-pricing';
import { openAiChatNode } from '../../../services/nodes/providers/openai-chat';
import { tokenPriceTable } from '../../../services/platform/setting-parsers';
import { seededRandom } from './seeded-random';

/**
 * The fault suite's ground truth for money: an OpenAI-compatible chat server
 * (`POST /v1/chat/completions`, streamed, usage in the last chunk) that records every call and
 * what it bills for it.
 *
 * Billing rule (as real providers bill):
 * - a call answered 200 is billed in full for the tokens it generated, even when the client goes
 *   away mid-stream: the prompt's tokens and the completion tokens it was going to report;
 * - a call answered 429 or 5xx, or one that never answered (`hang`), is not billed.
 * The charge is computed with the service's own price arithmetic (llm-pricing.ts) over the same
 * `OPENAI_PRICES` text the service is given, so the two cannot drift.
 *
 * The tokens are kept within what the service estimates for the call (its reservation assumes
 * the prompt at 3 characters a token and `max_tokens` output tokens): the fake counts a prompt at
 * 4 characters a token and never generates more than `max_tokens`, so a bill never exceeds the
 * service's estimate (which it caps a charge at) for a call the service could make.
 */

export const FAKE_MODEL = 'fault-model';
/** USD per million input/output tokens: 2.00/8.00 (so 1 token in = 2 micro-USD, out = 8). */
export const FAKE_PRICES = `${FAKE_MODEL}=2.00/8.00`;

/** The environment that points a service at the fake. */
export function providerEnv(fakeUrl: string): Record<string, string> {
  return { OPENAI_API_KEY: 'sk-fault-fake-0123456789', OPENAI_BASE_URL: `${fakeUrl}/v1`, OPENAI_MODELS: FAKE_MODEL, OPENAI_PRICES: FAKE_PRICES };
}

export type CallStatus = 'answered' | 'failed' | 'cut' | 'hung';

export interface ProviderCall {
  /** 1, 2, 3… in arrival order. */
  seq: number;
  /** What followed `tag:` in the prompt (up to a space), or null. */
  tag: string | null;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** What the fake bills for this call, integer micro-USD (0 for failed or hung calls). */
  billedMicros: number;
  /** answered: streamed to the end; failed: answered 429/5xx; cut: answered 200 but the client went away; hung: never answered (on purpose, or the client left during the delay). */
  status: CallStatus;
  /** HTTP status answered (0 while hung). */
  httpStatus: number;
  startedAt: number;
  endedAt: number | null;
  /** The client closed the connection before the answer ended (for chat APIs, that is the cancel). */
  cancelled: boolean;
}

export interface Behaviour {
  /** Latency before the answer's head. */
  delayMs: number;
  /** Pause between streamed chunks. */
  chunkDelayMs: number;
  /** Fraction of calls failed with `failStatus` (a seeded choice: the same seed fails the same calls). */
  failRatio: number;
  failStatus: number;
  /** Calls never answered (the connection stays open, nothing is written). */
  hang: boolean;
  /** The next N calls fail with `failStatus`, whatever `failRatio` says. */
  failNext: number;
  /** Completion tokens each answer generates (kept at or under the call's max_tokens). */
  completionTokens: number;
  /** Chunks the completion is streamed in. */
  chunks: number;
  /** Answers wait (after `delayMs`) while true: calls pile up in flight until `behave({ hold: false })` lets them all go on. */
  hold: boolean;
  /**
   * A provider's own rate limit: a call that would make more than this many calls answered (not
   * refused) start within one sliding second is answered 429 (Retry-After 0); 0: none.
   */
  refuseAbovePerSecond: number;
}

export interface ProviderFake {
  url: string;
  readonly calls: readonly ProviderCall[];
  /** Changes the behaviour for calls from now on (merged into the current one). */
  behave(change: Partial<Behaviour>): void;
  readonly behaviour: Readonly<Behaviour>;
  /** Calls whose connection is open and whose answer has not ended: what the provider has in flight now. */
  inFlight(): number;
  callsFor(tag: string): ProviderCall[];
  /** What the fake billed for the calls carrying `tag`. */
  billedMicrosFor(tag: string): number;
  /** The cost of one call at the fake's prices (the service's arithmetic). */
  costMicros(model: string, promptTokens: number, completionTokens: number): number;
  /** The service's worst-case estimate of an `openai-chat` step with these literal inputs (what a lost attempt is charged). */
  estimateMicros(inputs: Record<string, unknown>): number;
  /** The OPENAI_PRICES text the fake and the service share. */
  readonly pricesText: string;
  close(): Promise<void>;
}

const DEFAULTS: Behaviour = { delayMs: 0, chunkDelayMs: 0, failRatio: 0, failStatus: 503, hang: false, failNext: 0, completionTokens: 20, chunks: 4, hold: false, refuseAbovePerSecond: 0 };

function promptText(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : [];
  return messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

export async function startProviderFake(options: { seed?: number; pricesText?: string } = {}): Promise<ProviderFake> {
  const pricesText = options.pricesText ?? FAKE_PRICES;
  const prices: Map<string, ModelPrice> = modelPrices(tokenPriceTable(pricesText));
  const models = [...prices.keys()];
  const estimator = openAiChatNode({ apiKey: 'x', baseUrl: 'http://127.0.0.1/v1', models, prices, timeoutMs: 1000 });
  const random = seededRandom(options.seed ?? 16);
  const behaviour: Behaviour = { ...DEFAULTS };
  const calls: ProviderCall[] = [];
  const hung = new Set<http.ServerResponse>();
  /** Answers waiting for `hold` to end. */
  let held: (() => void)[] = [];
  const letHeldGo = (): void => {
    for (const go of held) go();
    held = [];
  };
  /** Whether one more call now would break the provider's own rate (counted over the calls it did not refuse). */
  const overRate = (now: number): boolean => {
    const limit = behaviour.refuseAbovePerSecond;
    if (limit <= 0) return false;
    let recent = 0;
    for (let i = calls.length - 1; i >= 0 && calls[i]!.startedAt > now - 1000; i -= 1) if (calls[i]!.httpStatus !== 429) recent += 1;
    return recent > limit;
  };

  function costMicros(model: string, promptTokens: number, completionTokens: number): number {
    const price = prices.get(model);
    if (!price) throw new Error(`the fake has no price for model ${model}`);
    return tokenCostMicros(price, { inputTokens: promptTokens, outputTokens: completionTokens });
  }

  async function answer(res: http.ServerResponse, body: Record<string, unknown>): Promise<void> {
    const text = promptText(body);
    const model = typeof body.model === 'string' ? body.model : '';
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : behaviour.completionTokens;
    const call: ProviderCall = {
      seq: calls.length + 1,
      tag: /tag:(\S+)/.exec(text)?.[1] ?? null,
      model,
      promptTokens: Math.ceil(text.length / 4),
      completionTokens: Math.min(behaviour.completionTokens, maxTokens),
      billedMicros: 0,
      status: 'hung',
      httpStatus: 0,
      startedAt: Date.now(),
      endedAt: null,
      cancelled: false,
    };
    calls.push(call);
    // Counted at arrival (the call itself included), as a provider's limiter counts requests.
    const refused = overRate(call.startedAt);
    if (refused) call.httpStatus = 429;
    let gone = false;
    res.on('close', () => {
      gone = true;
      if (!res.writableEnded) call.cancelled = true;
      if (call.status === 'answered' && !res.writableEnded) call.status = 'cut';
      call.endedAt ??= Date.now();
    });
    const failing = refused || behaviour.failNext > 0 || (behaviour.failRatio > 0 && random() < behaviour.failRatio);
    if (!refused && behaviour.failNext > 0) behaviour.failNext -= 1;
    if (behaviour.hang) {
      hung.add(res);
      return;
    }
    if (behaviour.delayMs > 0 && !refused) await sleep(behaviour.delayMs);
    if (behaviour.hold && !refused && !gone) await new Promise<void>((resolve) => held.push(resolve));
    // The client left before any answer: nothing was generated, nothing is billed.
    if (gone || res.destroyed) return;
    if (failing || !prices.has(model)) {
      call.status = 'failed';
      call.httpStatus = refused ? 429 : prices.has(model) ? behaviour.failStatus : 404;
      res.writeHead(call.httpStatus, { 'content-type': 'application/json', ...(call.httpStatus === 429 ? { 'retry-after': '0' } : {}) });
      res.end(JSON.stringify({ error: { message: `the fake failed this call on purpose (${call.httpStatus})`, type: 'server_error' } }));
      call.endedAt = Date.now();
      return;
    }
    // Answered 200: billed in full from here on, whatever the client does.
    call.status = 'answered';
    call.httpStatus = 200;
    call.billedMicros = costMicros(model, call.promptTokens, call.completionTokens);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const base = { id: `chatcmpl-fake-${call.seq}`, object: 'chat.completion.chunk', created: 1_700_000_000, model };
    const send = (chunk: unknown): void => {
      if (!res.destroyed) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    for (let i = 0; i < behaviour.chunks; i += 1) {
      if (behaviour.chunkDelayMs > 0) await sleep(behaviour.chunkDelayMs);
      if (gone || res.destroyed) return;
      send({ ...base, choices: [{ index: 0, delta: { content: `piece${i} ` }, finish_reason: null }] });
    }
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    send({ ...base, choices: [], usage: { prompt_tokens: call.promptTokens, completion_tokens: call.completionTokens, total_tokens: call.promptTokens + call.completionTokens } });
    if (gone || res.destroyed) return;
    res.end('data: [DONE]\n\n');
    call.endedAt = Date.now();
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !(req.url ?? '').endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end();
        return;
      }
      answer(res, body).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const callsFor = (tag: string): ProviderCall[] => calls.filter((c) => c.tag === tag);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    behaviour,
    behave(change) {
      Object.assign(behaviour, change);
      if (!behaviour.hold) letHeldGo();
    },
    inFlight: () => calls.filter((c) => c.endedAt === null).length,
    callsFor,
    billedMicrosFor: (tag) => callsFor(tag).reduce((sum, c) => sum + c.billedMicros, 0),
    costMicros,
    estimateMicros: (inputs) => estimator.estimate(inputs as Parameters<typeof estimator.estimate>[0]),
    pricesText,
    close: () =>
      new Promise((resolve) => {
        for (const res of hung) res.destroy();
        letHeldGo();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
