import type { RunEvent } from '../../services/contract';
import { llmProviderNodes, type LlmProviderSettings, type NodeContext, type NodeDefinition } from '../../services/nodes';
import { AppError } from '../../services/platform/app-error';
import { anthropicStream, anthropicStreamError, errorReply, openAiStream, startLlmFake, type LlmFake } from '../support/llm-fake';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

const OPENAI_KEY = 'sk-test-openai-0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-test-0123456789abcdef';

function settings(fake: LlmFake, overrides: Partial<LlmProviderSettings> = {}): LlmProviderSettings {
  return {
    openaiApiKey: OPENAI_KEY,
    openaiBaseUrl: `${fake.url}/v1`,
    openaiModels: ['fake-mini', 'fake-large'],
    openaiPrices: { 'fake-mini': { input: '0.15', output: '0.60' }, 'fake-large': { input: '2.50', output: '10.00' } },
    anthropicApiKey: ANTHROPIC_KEY,
    anthropicBaseUrl: fake.url,
    anthropicModels: ['claude-fake'],
    anthropicPrices: { 'claude-fake': { input: '3.00', output: '15.00' } },
    providerTimeoutMs: 10_000,
    ...overrides,
  };
}

function context(signal = new AbortController().signal) {
  const progress: { at: number; message: string }[] = [];
  const ctx: NodeContext = { signal, progress: (message) => progress.push({ at: Date.now(), message }), artifacts: {} as NodeContext['artifacts'] };
  return { ctx, progress };
}

function node(nodes: NodeDefinition[], id: string): NodeDefinition {
  const found = nodes.find((n) => n.spec.id === id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}

async function failure(work: Promise<unknown>): Promise<AppError> {
  const err = await work.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('LLM provider nodes against local fakes of the provider APIs', () => {
  let fake: LlmFake;
  let nodes: NodeDefinition[];

  beforeAll(async () => {
    fake = await startLlmFake(openAiStream(['Hello', ', ', 'world'], { prompt: 12, completion: 3 }));
    nodes = llmProviderNodes(settings(fake), { progressIntervalMs: 200 });
  });
  afterAll(async () => {
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('leaves out the nodes of a provider without a key', () => {
    expect(llmProviderNodes(settings(fake, { openaiApiKey: '', anthropicApiKey: '' }))).toEqual([]);
    expect(llmProviderNodes(settings(fake, { anthropicApiKey: '' })).map((n) => n.spec.id)).toEqual(['openai-chat']);
  });

  it('openai-chat sends the bearer key and a streaming chat body, and returns the streamed text priced at the reported usage', async () => {
    const chat = node(nodes, 'openai-chat');
    const inputs = { prompt: 'Say hello', system: 'Be brief.', model: 'fake-large', temperature: 0.2, maxTokens: 100 };
    const { ctx } = context();
    const outputs = await chat.execute(inputs, ctx);
    expect(outputs).toEqual({ text: 'Hello, world', usage: { model: 'fake-large', inputTokens: 12, outputTokens: 3 } });
    const [sent] = fake.requests;
    expect(sent!.path).toBe('/v1/chat/completions');
    expect(sent!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(sent!.body).toEqual({
      model: 'fake-large',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }],
      temperature: 0.2,
      max_tokens: 100,
      stream: true,
      stream_options: { include_usage: true },
    });
    // 12 × 2.50 + 3 × 10.00 micro-USD = 60; the reservation holds the prompt estimate + 100 output tokens.
    expect(chat.price(inputs, outputs)).toBe(60);
    expect(chat.estimate(inputs)).toBe(Math.ceil((Math.ceil('Say hello'.length / 3 + 'Be brief.'.length / 3) + 16) * 2.5 + 100 * 10));
  });

  it('reports streaming progress at most once per interval, then a summary', async () => {
    const pieces = Array.from({ length: 30 }, (_, i) => `piece ${i} `);
    fake.script(openAiStream(pieces, { prompt: 5, completion: 30 }, 40));
    const { ctx, progress } = context();
    const began = Date.now();
    const outputs = await node(nodes, 'openai-chat').execute({ prompt: 'count' }, ctx);
    const ended = Date.now();
    expect(outputs.text).toBe(pieces.join(''));
    const streaming = progress.slice(0, -1);
    // 30 pieces over at least 1.2 s at one report per 200 ms: a handful, not one per piece. The
    // n-th report comes at least n intervals after the call began, whatever this machine's speed
    // (the gap between two reports as recorded here is not: formatting one can take a while).
    expect(streaming.length).toBeGreaterThanOrEqual(2);
    expect(streaming.length).toBeLessThanOrEqual(Math.floor((ended - began) / 200));
    expect(streaming[0]!.message).toMatch(/^received [\d,]+ characters$/);
    expect(progress.at(-1)!.message).toBe(`received ${pieces.join('').length} characters, 5 input and 30 output tokens`);
  });

  it('asks for structured output with a JSON schema and returns the parsed data', async () => {
    const schema = { title: 'City info', type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    fake.script(openAiStream(['{"city":', '"Paris"}'], { prompt: 40, completion: 6 }));
    const { ctx } = context();
    const outputs = await node(nodes, 'openai-chat').execute({ prompt: 'Capital of France?', schema }, ctx);
    expect(outputs.data).toEqual({ city: 'Paris' });
    expect(fake.requests[0]!.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'City_info', schema, strict: true } });
  });

  it('fails a structured answer that is not JSON with bad_request, charging its tokens', async () => {
    fake.script(openAiStream(['{"city": "Par'], { prompt: 40, completion: 6 }));
    const { ctx } = context();
    const err = await failure(node(nodes, 'openai-chat').execute({ prompt: 'Capital?', schema: { type: 'object' } }, ctx));
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain('not valid JSON');
    expect((err as AppError & { costMicros: number }).costMicros).toBe(Math.ceil((40 * 0.15 + 6 * 0.6)));
  });

  it('retries a 429 after the Retry-After it asks for', async () => {
    fake.script(errorReply(429, { message: 'Rate limit reached for requests', type: 'requests' }, { 'retry-after': '1' }));
    const { ctx } = context();
    const outputs = await node(nodes, 'openai-chat').execute({ prompt: 'hi' }, ctx);
    expect(outputs.text).toBe('Hello, world');
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('maps a refused key to unavailable without repeating the key, and a refused request to bad_request', async () => {
    fake.script(errorReply(401, { message: `Incorrect API key provided: ${OPENAI_KEY}. You can find your API key at https://platform.openai.com/account/api-keys.`, type: 'invalid_request_error' }));
    const denied = await failure(node(nodes, 'openai-chat').execute({ prompt: 'hi' }, context().ctx));
    expect(denied.code).toBe('unavailable');
    expect(denied.message).toContain('Incorrect API key provided');
    expect(denied.message).not.toContain(OPENAI_KEY);
    expect(fake.requests).toHaveLength(1); // a 401 is not retried

    fake.script(errorReply(400, { message: "Invalid schema for response_format 'answer'", type: 'invalid_request_error' }));
    const refused = await failure(node(nodes, 'openai-chat').execute({ prompt: 'hi', schema: { type: 'object' } }, context().ctx));
    expect(refused.code).toBe('bad_request');
    expect(refused.message).toBe("openai refused the request (400): Invalid schema for response_format 'answer'");
  });

  it('does not follow a redirect (the key stays with the provider): unavailable, naming where it pointed', async () => {
    fake.script(async (res) => {
      res.writeHead(307, { location: 'http://127.0.0.1:9/elsewhere/chat/completions' });
      res.end();
    });
    const moved = await failure(node(nodes, 'openai-chat').execute({ prompt: 'hi' }, context().ctx));
    expect(moved.code).toBe('unavailable');
    expect(moved.message).toBe('openai answered a redirect (307) to http://127.0.0.1:9/elsewhere/chat/completions; provider calls do not follow redirects: the operator must set its base URL to where it points');
    expect(fake.requests).toHaveLength(1);
  });

  it('closes the provider connection when the run aborts mid-stream', async () => {
    fake.script(openAiStream(Array.from({ length: 100 }, () => 'word '), { prompt: 5, completion: 100 }, 50));
    const controller = new AbortController();
    const { ctx, progress } = context(controller.signal);
    const closed = fake.closedEarly();
    const work = node(nodes, 'openai-chat').execute({ prompt: 'go on' }, { ...ctx, progress: (m) => { ctx.progress(m); controller.abort(new Error('run cancelled')); } });
    await expect(work).rejects.toThrow('run cancelled');
    const recorded = await closed;
    expect(recorded.path).toBe('/v1/chat/completions');
    expect(progress.length).toBe(1);
  });

  it('anthropic-messages sends x-api-key and anthropic-version, streams text and prices message_start + message_delta usage', async () => {
    fake.script(anthropicStream(['Bonjour', ' le monde'], { input: 21, output: 7 }));
    const messages = node(nodes, 'anthropic-messages');
    const inputs = { prompt: 'Say hello in French', system: 'Be brief.', maxTokens: 50, temperature: 0.5 };
    const outputs = await messages.execute(inputs, context().ctx);
    expect(outputs).toEqual({ text: 'Bonjour le monde', usage: { model: 'claude-fake', inputTokens: 21, outputTokens: 7 } });
    const [sent] = fake.requests;
    expect(sent!.path).toBe('/v1/messages');
    expect(sent!.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(sent!.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.body).toEqual({ model: 'claude-fake', max_tokens: 50, messages: [{ role: 'user', content: 'Say hello in French' }], system: 'Be brief.', temperature: 0.5, stream: true });
    // 21 × 3.00 + 7 × 15.00 = 168 micro-USD.
    expect(messages.price(inputs, outputs)).toBe(168);
  });

  it('anthropic-messages gets structured output through a forced tool call', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    fake.script(anthropicStream(['{"n"', ': 42}'], { input: 400, output: 12 }, { tool: true }));
    const outputs = await node(nodes, 'anthropic-messages').execute({ prompt: 'The answer?', schema }, context().ctx);
    expect(outputs.data).toEqual({ n: 42 });
    expect(outputs.text).toBe('{"n": 42}');
    const body = fake.requests[0]!.body;
    expect(body.tools).toEqual([{ name: 'answer', description: 'Gives the answer in the required structure.', input_schema: schema }]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'answer' });
  });

  it('anthropic-messages retries a 529 overload and fails an overloaded stream as unavailable', async () => {
    fake.script(errorReply(529, { type: 'overloaded_error', message: 'Overloaded' }, { 'retry-after': '0' }), anthropicStream(['ok'], { input: 3, output: 1 }));
    expect((await node(nodes, 'anthropic-messages').execute({ prompt: 'hi' }, context().ctx)).text).toBe('ok');
    expect(fake.requests).toHaveLength(2);

    fake.script(anthropicStreamError('overloaded_error', 'Overloaded'));
    const err = await failure(node(nodes, 'anthropic-messages').execute({ prompt: 'hi' }, context().ctx));
    expect(err.code).toBe('unavailable');
    expect(err.message).toBe('anthropic failed while streaming (overloaded_error): Overloaded');
  });

  it('rejects an unknown model before reserving anything', () => {
    expect(() => node(nodes, 'openai-chat').estimate({ prompt: 'x', model: 'gpt-9' })).toThrow('must be one of: fake-mini, fake-large');
  });
});

describe('LLM nodes in the running service', () => {
  let fake: LlmFake;
  let service: TestService;
  let keyless: TestService;

  beforeAll(async () => {
    fake = await startLlmFake(openAiStream(Array.from({ length: 25 }, (_, i) => `token${i} `), { prompt: 1000, completion: 200 }, 50));
    service = await startTestService({ env: { OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODELS: 'fake-model', OPENAI_PRICES: 'fake-model=1.25/5.00' } });
    keyless = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
    await keyless?.close();
    await fake?.close();
  });

  it('lists openai-chat only where a key is configured', async () => {
    const listed = (await (await fetch(`${service.url}/v1/nodes?category=llm`)).json()) as { id: string; kind: string }[];
    expect(listed.map((n) => [n.id, n.kind])).toEqual([['openai-chat', 'llm']]);
    const none = (await (await fetch(`${keyless.url}/v1/nodes?category=llm`)).json()) as unknown[];
    expect(none).toEqual([]);
  });

  it('runs a chat step with streaming progress and charges the reported usage × price', async () => {
    const began = Date.now();
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(service.account.token), 'content-type': 'application/json' },
      body: JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'chat', uses: 'openai-chat', inputs: { prompt: 'Count to 25' } }, { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } }] } }),
    });
    expect(res.status).toBe(200);
    const messages = await readSse(res);
    const ended = Date.now();
    const events = messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
    const progress = events.filter((e): e is Extract<RunEvent, { type: 'step.progress' }> => e.type === 'step.progress' && e.nodeId === 'chat');
    // 25 pieces over at least 1.25 s at one report per 500 ms, then the summary: a few, not one per
    // piece; the n-th report at least n intervals after the run began, however fast this machine is.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length - 1).toBeLessThanOrEqual(Math.floor((ended - began) / 500));
    expect(progress.at(-1)!.message).toContain('1000 input and 200 output tokens');
    const completed = events.find((e): e is Extract<RunEvent, { type: 'step.completed' }> => e.type === 'step.completed' && e.nodeId === 'chat');
    // 1000 × 1.25 + 200 × 5.00 = 2250 micro-USD.
    expect(completed!.usage.costUsd).toBe(0.00225);
    expect(events.at(-1)!.type).toBe('run.completed');
    expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
  });
});
