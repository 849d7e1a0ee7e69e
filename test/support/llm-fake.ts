import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A local stand-in for the OpenAI and Anthropic chat APIs (and, routed by path, any hosted
 * provider's): it records every request (headers, JSON body, whether the client closed the
 * connection before the answer ended) and answers each one with the next scripted reply, in the
 * providers' real wire formats, or in the broken ones below.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The JSON body; `{}` when there is none or it is not JSON (a multipart upload). */
  body: Record<string, unknown>;
  /** The body as sent (a multipart upload's parts, say). */
  raw: Buffer;
  at: number;
  /** Set when the client went away before the response ended (an aborted stream). */
  closedEarly: boolean;
}

export type Reply = (res: http.ServerResponse, req: RecordedRequest) => Promise<void>;

export interface LlmFake {
  url: string;
  requests: RecordedRequest[];
  /** Replies for the next requests, in order; once used up, `fallback` answers. */
  script(...replies: Reply[]): void;
  fallback: Reply;
  /** Resolves once a request's connection closed before its answer ended. */
  closedEarly(): Promise<RecordedRequest>;
  close(): Promise<void>;
}

export async function startLlmFake(fallback: Reply): Promise<LlmFake> {
  const requests: RecordedRequest[] = [];
  const queue: Reply[] = [];
  const closeWaiters: ((r: RecordedRequest) => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const recorded: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: jsonOf(raw.toString('utf8')), raw, at: Date.now(), closedEarly: false };
      requests.push(recorded);
      res.on('close', () => {
        if (res.writableEnded) return;
        recorded.closedEarly = true;
        for (const waiter of closeWaiters.splice(0)) waiter(recorded);
      });
      const reply = queue.shift() ?? fake.fallback;
      reply(res, recorded).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: LlmFake = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    script: (...replies) => void queue.push(...replies),
    fallback,
    closedEarly: () => new Promise((resolve) => closeWaiters.push(resolve)),
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return fake;
}

function jsonOf(text: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function sse(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

/** Writes unless the client is gone; false once it is. */
function write(res: http.ServerResponse, text: string): boolean {
  if (res.destroyed) return false;
  res.write(text);
  return true;
}

/** An OpenAI chat completion stream: one chunk per piece, a finish chunk, a usage chunk when asked for, `[DONE]`. */
export function openAiStream(pieces: readonly string[], usage: { prompt: number; completion: number }, delayMs = 0): Reply {
  return async (res, req) => {
    sse(res);
    const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model: req.body.model };
    write(res, `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
    for (const piece of pieces) {
      if (delayMs > 0) await sleep(delayMs);
      if (!write(res, `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`)) return;
    }
    write(res, `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    const options = req.body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage) {
      write(res, `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion } })}\n\n`);
    }
    write(res, 'data: [DONE]\n\n');
    res.end();
  };
}

function event(res: http.ServerResponse, name: string, data: Record<string, unknown>): boolean {
  return write(res, `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
}

/** An Anthropic Messages stream: message_start, a text (or tool_use) block of deltas, message_delta, message_stop. */
export function anthropicStream(pieces: readonly string[], usage: { input: number; output: number }, options: { delayMs?: number; tool?: boolean } = {}): Reply {
  return async (res, req) => {
    sse(res);
    event(res, 'message_start', { message: { id: 'msg_fake', type: 'message', role: 'assistant', model: req.body.model, content: [], stop_reason: null, usage: { input_tokens: usage.input, output_tokens: 1 } } });
    event(res, 'content_block_start', { index: 0, content_block: options.tool ? { type: 'tool_use', id: 'toolu_fake', name: 'answer', input: {} } : { type: 'text', text: '' } });
    write(res, 'event: ping\ndata: {"type": "ping"}\n\n');
    for (const piece of pieces) {
      if (options.delayMs) await sleep(options.delayMs);
      const delta = options.tool ? { type: 'input_json_delta', partial_json: piece } : { type: 'text_delta', text: piece };
      if (!event(res, 'content_block_delta', { index: 0, delta })) return;
    }
    event(res, 'content_block_stop', { index: 0 });
    event(res, 'message_delta', { delta: { stop_reason: options.tool ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output } });
    event(res, 'message_stop', {});
    res.end();
  };
}

/** A JSON error answer in the providers' shape, e.g. 429 with `Retry-After`. */
export function errorReply(status: number, error: { message: string; type: string }, headers: Record<string, string> = {}): Reply {
  return async (res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ ...(error.type.endsWith('_error') && status !== 429 ? { type: 'error' } : {}), error }));
  };
}

/** An Anthropic stream that fails mid-way with an `error` event (e.g. overloaded_error). */
export function anthropicStreamError(type: string, message: string): Reply {
  return async (res, req) => {
    sse(res);
    event(res, 'message_start', { message: { id: 'msg_fake', type: 'message', role: 'assistant', model: req.body.model, content: [], usage: { input_tokens: 10, output_tokens: 1 } } });
    event(res, 'error', { error: { type, message } });
    res.end();
  };
}

/** A JSON answer, e.g. `jsonReply(200, { data: [] })`: a provider's success body (here, with what the test leaves out). */
export function jsonReply(status: number, body: unknown): Reply {
  return async (res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
}

/** 200 `text/html`: a gateway's error page in front of the provider, answered as if it were the provider. */
export function gatewayPage(): Reply {
  return async (res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>\n');
  };
}

/** 200 `text/event-stream` that ends without sending a single event. */
export function emptyEventStream(): Reply {
  return async (res) => {
    sse(res);
    res.end();
  };
}

/** An OpenAI chat stream: the first chunks of `pieces`, then how it goes wrong. */
export function brokenOpenAiStream(pieces: readonly string[], ending: 'malformed' | 'unfinished'): Reply {
  return async (res, req) => {
    sse(res);
    const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model: req.body.model };
    for (const piece of pieces) write(res, `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`);
    // `malformed`: an event whose data is not JSON; `unfinished`: the stream simply ends, with no finish_reason, usage or [DONE].
    if (ending === 'malformed') write(res, 'data: {not json\n\n');
    res.end();
  };
}

/** An Anthropic Messages stream: message_start and the text deltas of `pieces`, then how it goes wrong. */
export function brokenAnthropicStream(pieces: readonly string[], ending: 'malformed' | 'unfinished'): Reply {
  return async (res, req) => {
    sse(res);
    event(res, 'message_start', { message: { id: 'msg_fake', type: 'message', role: 'assistant', model: req.body.model, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } });
    event(res, 'content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    for (const piece of pieces) event(res, 'content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } });
    // `malformed`: an event whose data is not JSON; `unfinished`: no message_delta, no message_stop.
    if (ending === 'malformed') write(res, 'event: content_block_delta\ndata: {not json\n\n');
    res.end();
  };
}
