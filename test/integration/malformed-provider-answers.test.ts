import type { RunEvent } from '../../services/contract';
import { llmProviderNodes } from '../../services/nodes';
import {
  brokenAnthropicStream,
  brokenOpenAiStream,
  emptyEventStream,
  gatewayPage,
  jsonReply,
  startLlmFake,
  type LlmFake,
  type Reply,
} from '../support/llm-fake';
import { seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * A provider answer that is not an answer. Every hosted provider node runs
 * against a local fake that answers 2xx with something its API never promises (a gateway's HTML
 * page, an empty or broken stream, a stream without its final event, a JSON body without the
 * fields the node needs). Each run must fail with `malformed_provider_response`, naming the
 * provider and what was wrong; the provider must be called once (not again as if nothing
 * happened); and the answered call must be charged the step's worst case, since it cannot be
 * priced. Before the fix these completed with empty outputs, or were retried three times and
 * charged nothing.
 */

const OPENAI_KEY = 'sk-test-openai-0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-test-0123456789abcdef';
const PRICES = { openai: 'fake-model=1.25/5.00', anthropic: 'claude-fake=3.00/15.00' };
const MP3 = Buffer.concat([Buffer.from('ID3'), Buffer.alloc(300, 7)]);

/** The LLM nodes as the service builds them, to price their worst cases independently. */
const llmNodes = llmProviderNodes({
  openaiApiKey: OPENAI_KEY,
  openaiBaseUrl: 'http://127.0.0.1/v1',
  openaiModels: ['fake-model'],
  openaiPrices: { 'fake-model': { input: '1.25', output: '5.00' } },
  anthropicApiKey: ANTHROPIC_KEY,
  anthropicBaseUrl: 'http://127.0.0.1',
  anthropicModels: ['claude-fake'],
  anthropicPrices: { 'claude-fake': { input: '3.00', output: '15.00' } },
  providerTimeoutMs: 1000,
});
const llmEstimate = (id: string, inputs: Record<string, unknown>) => llmNodes.find((n) => n.spec.id === id)!.estimate(inputs);

const CHAT = { uses: 'openai-chat', inputs: { prompt: 'hi', model: 'fake-model', maxTokens: 16 }, output: 'text' };
const CLAUDE = { uses: 'anthropic-messages', inputs: { prompt: 'hi', model: 'claude-fake', maxTokens: 16 }, output: 'text' };
const FAL_SUBMIT = 'POST /fal-ai/flux/schnell';
const REPLICATE_CREATE = 'POST /v1/models/black-forest-labs/flux-schnell/predictions';

interface Case {
  /** The node under test, its inputs, and the output port a run output reads. */
  node: { uses: string; inputs: Record<string, unknown>; output: string };
  /** A step before it (its price is charged as well), e.g. speech for a transcription. */
  before?: { id: string; uses: string; inputs: Record<string, unknown>; price: number };
  /** Replies by `METHOD /path`; `base` is the fake's own URL, for the links a queue API returns. */
  routes: (base: string) => Record<string, Reply>;
  /** Every request the fake must see, in order. */
  calls: string[];
  /** What the step is charged: its worst case (the answered call cannot be priced). */
  charge: number;
  /** The run's error message. */
  message: RegExp;
}

const falSubmitted = (base: string) => {
  const at = `${base}/fal-ai/flux/requests/req-1`;
  return jsonReply(200, { request_id: 'req-1', response_url: at, status_url: `${at}/status`, cancel_url: `${at}/cancel` });
};
const prediction = (base: string, status: string, output: unknown = null) =>
  jsonReply(201, { id: 'pred-1', status, output, error: null, urls: { get: `${base}/v1/predictions/pred-1`, cancel: `${base}/v1/predictions/pred-1/cancel` } });

const CASES: Record<string, Case> = {
  'openai-chat: malformed JSON mid-stream': {
    node: CHAT,
    routes: () => ({ 'POST /v1/chat/completions': brokenOpenAiStream(['Hel'], 'malformed') }),
    calls: ['POST /v1/chat/completions'],
    charge: llmEstimate('openai-chat', CHAT.inputs),
    message: /^openai sent a malformed answer: a stream event that is not JSON: \{not json$/,
  },
  'openai-chat: 200 text/html': {
    node: CHAT,
    routes: () => ({ 'POST /v1/chat/completions': gatewayPage() }),
    calls: ['POST /v1/chat/completions'],
    charge: llmEstimate('openai-chat', CHAT.inputs),
    message: /^openai sent a malformed answer: 200 with content type text\/html where text\/event-stream was expected$/,
  },
  'openai-chat: 200 event-stream without any event': {
    node: CHAT,
    routes: () => ({ 'POST /v1/chat/completions': emptyEventStream() }),
    calls: ['POST /v1/chat/completions'],
    charge: llmEstimate('openai-chat', CHAT.inputs),
    message: /^openai sent a malformed answer: a stream without any completion$/,
  },
  'openai-chat: a stream without a finish_reason': {
    node: CHAT,
    routes: () => ({ 'POST /v1/chat/completions': brokenOpenAiStream(['Hel', 'lo'], 'unfinished') }),
    calls: ['POST /v1/chat/completions'],
    charge: llmEstimate('openai-chat', CHAT.inputs),
    message: /^openai sent a malformed answer: a stream that ended without a finish_reason$/,
  },
  'openai-chat: a JSON body instead of the stream': {
    node: CHAT,
    routes: () => ({ 'POST /v1/chat/completions': jsonReply(200, { id: 'chatcmpl-1', object: 'chat.completion', choices: [] }) }),
    calls: ['POST /v1/chat/completions'],
    charge: llmEstimate('openai-chat', CHAT.inputs),
    message: /^openai sent a malformed answer: 200 with content type application\/json where text\/event-stream was expected$/,
  },
  'anthropic-messages: malformed JSON mid-stream': {
    node: CLAUDE,
    routes: () => ({ 'POST /v1/messages': brokenAnthropicStream(['Bon'], 'malformed') }),
    calls: ['POST /v1/messages'],
    charge: llmEstimate('anthropic-messages', CLAUDE.inputs),
    message: /^anthropic sent a malformed answer: a stream event that is not JSON: \{not json$/,
  },
  'anthropic-messages: 200 text/html': {
    node: CLAUDE,
    routes: () => ({ 'POST /v1/messages': gatewayPage() }),
    calls: ['POST /v1/messages'],
    charge: llmEstimate('anthropic-messages', CLAUDE.inputs),
    message: /^anthropic sent a malformed answer: 200 with content type text\/html where text\/event-stream was expected$/,
  },
  'anthropic-messages: 200 event-stream without any event': {
    node: CLAUDE,
    routes: () => ({ 'POST /v1/messages': emptyEventStream() }),
    calls: ['POST /v1/messages'],
    charge: llmEstimate('anthropic-messages', CLAUDE.inputs),
    message: /^anthropic sent a malformed answer: a stream without any message$/,
  },
  'anthropic-messages: a stream without message_stop': {
    node: CLAUDE,
    routes: () => ({ 'POST /v1/messages': brokenAnthropicStream(['Bon', 'jour'], 'unfinished') }),
    calls: ['POST /v1/messages'],
    charge: llmEstimate('anthropic-messages', CLAUDE.inputs),
    message: /^anthropic sent a malformed answer: a stream that ended before message_stop$/,
  },
  'anthropic-messages: a JSON body instead of the stream': {
    node: CLAUDE,
    routes: () => ({ 'POST /v1/messages': jsonReply(200, { id: 'msg_1', type: 'message', content: [] }) }),
    calls: ['POST /v1/messages'],
    charge: llmEstimate('anthropic-messages', CLAUDE.inputs),
    message: /^anthropic sent a malformed answer: 200 with content type application\/json where text\/event-stream was expected$/,
  },
  'openai-image: 200 text/html': {
    node: { uses: 'openai-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ 'POST /v1/images/generations': gatewayPage() }),
    calls: ['POST /v1/images/generations'],
    charge: 40_000,
    message: /^openai sent a malformed answer: 200 with content type text\/html where application\/json was expected$/,
  },
  'openai-image: a JSON body without data': {
    node: { uses: 'openai-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ 'POST /v1/images/generations': jsonReply(200, { created: 1 }) }),
    calls: ['POST /v1/images/generations'],
    charge: 40_000,
    message: /^openai sent a malformed answer: a body without images/,
  },
  'openai-image: an image without b64_json or url': {
    node: { uses: 'openai-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ 'POST /v1/images/generations': jsonReply(200, { created: 1, data: [{ revised_prompt: 'p' }] }) }),
    calls: ['POST /v1/images/generations'],
    charge: 40_000,
    message: /^openai sent a malformed answer: an image without b64_json or url$/,
  },
  'openai-image: b64_json that is not an image': {
    node: { uses: 'openai-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ 'POST /v1/images/generations': jsonReply(200, { created: 1, data: [{ b64_json: Buffer.from('<html>not an image</html>').toString('base64') }] }) }),
    calls: ['POST /v1/images/generations'],
    charge: 40_000,
    message: /^openai sent a malformed answer: a result that is not an image$/,
  },
  'openai-embed: 200 text/html': {
    node: { uses: 'openai-embed', inputs: { text: 'hello' }, output: 'embedding' },
    routes: () => ({ 'POST /v1/embeddings': gatewayPage() }),
    calls: ['POST /v1/embeddings'],
    charge: 1, // 5 bytes, one token each, at 20,000 micro-USD per million tokens, rounded up
    message: /^openai sent a malformed answer: 200 with content type text\/html where application\/json was expected$/,
  },
  'openai-embed: a JSON body without an embedding': {
    node: { uses: 'openai-embed', inputs: { text: 'hello' }, output: 'embedding' },
    routes: () => ({ 'POST /v1/embeddings': jsonReply(200, { object: 'list', data: [], usage: { prompt_tokens: 1, total_tokens: 1 } }) }),
    calls: ['POST /v1/embeddings'],
    charge: 1,
    message: /^openai sent a malformed answer: a body without an embedding of numbers$/,
  },
  'openai-speech: 200 text/html': {
    node: { uses: 'openai-speech', inputs: { text: 'Hello there.' }, output: 'audio' },
    routes: () => ({ 'POST /v1/audio/speech': gatewayPage() }),
    calls: ['POST /v1/audio/speech'],
    charge: 180, // 12 characters at 15 USD per million
    message: /^openai sent a malformed answer: 200 with content type text\/html where audio was expected$/,
  },
  'openai-speech: an empty audio body': {
    node: { uses: 'openai-speech', inputs: { text: 'Hello there.' }, output: 'audio' },
    routes: () => ({ 'POST /v1/audio/speech': async (res) => void res.writeHead(200, { 'content-type': 'audio/mpeg' }).end() }),
    calls: ['POST /v1/audio/speech'],
    charge: 180,
    message: /^openai sent a malformed answer: an empty audio body$/,
  },
  'openai-transcribe: 200 text/html': {
    before: { id: 's', uses: 'openai-speech', inputs: { text: 'Hello there.' }, price: 180 },
    node: { uses: 'openai-transcribe', inputs: { audio: '${s.audio}', max_seconds: 60 }, output: 'text' },
    routes: () => ({ 'POST /v1/audio/speech': async (res) => void res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(MP3), 'POST /v1/audio/transcriptions': gatewayPage() }),
    calls: ['POST /v1/audio/speech', 'POST /v1/audio/transcriptions'],
    charge: 6000, // max_seconds: a minute at 6,000 micro-USD
    message: /^openai sent a malformed answer: 200 with content type text\/html where application\/json was expected$/,
  },
  'openai-transcribe: a JSON body without text': {
    before: { id: 's', uses: 'openai-speech', inputs: { text: 'Hello there.' }, price: 180 },
    node: { uses: 'openai-transcribe', inputs: { audio: '${s.audio}', max_seconds: 60 }, output: 'text' },
    routes: () => ({ 'POST /v1/audio/speech': async (res) => void res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(MP3), 'POST /v1/audio/transcriptions': jsonReply(200, { task: 'transcribe', duration: 2 }) }),
    calls: ['POST /v1/audio/speech', 'POST /v1/audio/transcriptions'],
    charge: 6000,
    message: /^openai sent a malformed answer: a transcription without "text"$/,
  },
  'fal-image: 200 text/html to the submit': {
    node: { uses: 'fal-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ [FAL_SUBMIT]: gatewayPage() }),
    calls: [FAL_SUBMIT],
    charge: 3000,
    message: /^fal sent a malformed answer: 200 with content type text\/html where application\/json was expected$/,
  },
  'fal-image: a submit answer without status_url': {
    node: { uses: 'fal-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ [FAL_SUBMIT]: jsonReply(200, { request_id: 'req-1' }) }),
    calls: [FAL_SUBMIT],
    charge: 3000,
    message: /^fal sent a malformed answer: an answer without a valid status_url$/,
  },
  'fal-image: an unknown status (the job is cancelled)': {
    node: { uses: 'fal-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: (base) => ({ [FAL_SUBMIT]: falSubmitted(base), 'GET /fal-ai/flux/requests/req-1/status': jsonReply(200, { status: 'SOMETHING_ELSE' }), 'PUT /fal-ai/flux/requests/req-1/cancel': jsonReply(202, { status: 'CANCELLATION_REQUESTED' }) }),
    calls: [FAL_SUBMIT, 'GET /fal-ai/flux/requests/req-1/status', 'PUT /fal-ai/flux/requests/req-1/cancel'],
    charge: 3000,
    message: /^fal sent a malformed answer: an unknown status "SOMETHING_ELSE"$/,
  },
  'fal-image: a result without images': {
    node: { uses: 'fal-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: (base) => ({ [FAL_SUBMIT]: falSubmitted(base), 'GET /fal-ai/flux/requests/req-1/status': jsonReply(200, { status: 'COMPLETED' }), 'GET /fal-ai/flux/requests/req-1': jsonReply(200, { seed: 42 }) }),
    calls: [FAL_SUBMIT, 'GET /fal-ai/flux/requests/req-1/status', 'GET /fal-ai/flux/requests/req-1'],
    charge: 3000,
    message: /^fal sent a malformed answer: a result without images$/,
  },
  'replicate-image: 200 text/html to the create': {
    node: { uses: 'replicate-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ [REPLICATE_CREATE]: gatewayPage() }),
    calls: [REPLICATE_CREATE],
    charge: 3000,
    message: /^replicate sent a malformed answer: 200 with content type text\/html where application\/json was expected$/,
  },
  'replicate-image: a prediction without urls': {
    node: { uses: 'replicate-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: () => ({ [REPLICATE_CREATE]: jsonReply(201, { id: 'pred-1', status: 'starting' }) }),
    calls: [REPLICATE_CREATE],
    charge: 3000,
    message: /^replicate sent a malformed answer: a prediction without a valid cancel URL$/,
  },
  'replicate-image: an unknown status (the prediction is cancelled)': {
    node: { uses: 'replicate-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: (base) => ({ [REPLICATE_CREATE]: prediction(base, 'mystery'), 'POST /v1/predictions/pred-1/cancel': prediction(base, 'canceled') }),
    calls: [REPLICATE_CREATE, 'POST /v1/predictions/pred-1/cancel'],
    charge: 3000,
    message: /^replicate sent a malformed answer: a prediction with an unknown status "mystery"$/,
  },
  'replicate-image: succeeded without output': {
    node: { uses: 'replicate-image', inputs: { prompt: 'p' }, output: 'image' },
    routes: (base) => ({ [REPLICATE_CREATE]: prediction(base, 'succeeded', null) }),
    calls: [REPLICATE_CREATE],
    charge: 3000,
    message: /^replicate sent a malformed answer: a prediction without output image URLs$/,
  },
};

describe('a provider answer that is not an answer fails its run, is paid once, and is not called again', () => {
  let fake: LlmFake;
  let routes: Record<string, Reply> = {};
  let service: TestService;

  beforeAll(async () => {
    fake = await startLlmFake(async (res, req) => {
      const reply = routes[`${req.method} ${req.path.split('?')[0]}`];
      if (reply) return reply(res, req);
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${req.method} ${req.path}`, type: 'not_found' } }));
    });
    service = await startTestService({
      env: {
        OPENAI_API_KEY: OPENAI_KEY,
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_MODELS: 'fake-model',
        OPENAI_PRICES: PRICES.openai,
        OPENAI_IMAGE_PRICES: 'gpt-image-1=40000',
        OPENAI_EMBEDDING_PRICES: 'text-embedding-3-small=20000',
        OPENAI_TTS_PRICES: 'tts-1=15000000',
        OPENAI_TRANSCRIBE_PRICES: 'whisper-1=6000',
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        ANTHROPIC_BASE_URL: fake.url,
        ANTHROPIC_MODELS: 'claude-fake',
        ANTHROPIC_PRICES: PRICES.anthropic,
        FAL_KEY: 'fal-test-key-0123456789abcdef',
        FAL_BASE_URL: fake.url,
        FAL_APPS: 'fal-ai/flux/schnell=3000',
        REPLICATE_API_TOKEN: 'r8_test_token_0123456789abcdef',
        REPLICATE_BASE_URL: fake.url,
        REPLICATE_MODELS: 'black-forest-labs/flux-schnell=3000',
        PROVIDER_POLL_MS: '10',
      },
    });
  });
  afterAll(async () => {
    await service?.close();
    await fake?.close();
  });

  it.each(Object.keys(CASES))('%s', async (name) => {
    const c = CASES[name]!;
    routes = c.routes(fake.url);
    fake.requests.length = 0;
    const who = await seedAccount(service.prisma, { slug: 'malformed', scopes: ['run'], balanceMicros: 1_000_000 });
    const nodes = [
      ...(c.before ? [{ id: c.before.id, uses: c.before.uses, inputs: c.before.inputs }] : []),
      { id: 'n', uses: c.node.uses, inputs: c.node.inputs },
      { id: 'o', uses: 'output', inputs: { value: `\${n.${c.node.output}}` } },
    ];
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer(who.token), 'content-type': 'application/json' },
      body: JSON.stringify({ workflow: { version: 2, nodes } }),
    });
    expect(res.status).toBe(200);
    const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);

    // The run's end: failed, with the code and a message naming the provider and what was wrong.
    const last = events.at(-1) as Extract<RunEvent, { type: 'run.failed' }>;
    expect(last).toMatchObject({ type: 'run.failed', error: { code: 'malformed_provider_response' } });
    expect(last.error.message).toMatch(c.message);
    // The provider's calls: the answered one once, never again as if nothing happened.
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(c.calls);
    // The charge: the answered call at its worst case (plus the step before it, at its price).
    const run = await service.prisma.run.findFirstOrThrow({ where: { orgId: who.orgId }, include: { steps: true } });
    const step = run.steps.find((s) => s.nodeId === 'n')!;
    expect(step.status).toBe('failed');
    expect(Number(step.costMicros)).toBe(c.charge);
    const charges = await service.prisma.ledgerEntry.aggregate({ where: { orgId: who.orgId, kind: 'run_charge' }, _sum: { amountMicros: true } });
    const total = c.charge + (c.before?.price ?? 0);
    expect(-Number(charges._sum.amountMicros ?? 0n)).toBe(total);
    expect(Number(run.spentMicros)).toBe(total);
    const org = await service.prisma.organization.findUniqueOrThrow({ where: { id: who.orgId } });
    expect({ balance: Number(org.balanceMicros), held: Number(org.heldMicros) }).toEqual({ balance: 1_000_000 - total, held: 0 });
  });
});
