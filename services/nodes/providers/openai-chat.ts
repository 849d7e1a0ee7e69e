import { AppError } from '../../platform/app-error';
import type { NodeDefinition } from '../node-definition';
import type { LlmCall, LlmNodeSettings, LlmRequest } from './llm-node';
import { llmNode } from './llm-node';
import type { TokenUsage } from './llm-pricing';
import { providerFetch } from './provider-http';
import { reportTokenUsage } from './provider-scope';
import { malformedResponse } from './provider-response';
import { eventStreamBody, parseStreamJson, readSseEvents, streamedErrorMessage } from './sse-lines';

const PROVIDER = 'openai';

interface ChatChunk {
  choices?: { delta?: { content?: string | null; refusal?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string; type?: string };
}

/** The request body of `POST /chat/completions` (streamed, usage requested in the last chunk). */
export function chatCompletionBody(request: LlmRequest): Record<string, unknown> {
  // With an image, the user message is content parts: the text, then the image as a data: URL.
  const content = request.image
    ? [{ type: 'text', text: request.prompt }, { type: 'image_url', image_url: { url: `data:${request.image.mimeType};base64,${request.image.base64}` } }]
    : request.prompt;
  const messages = [...(request.system === undefined ? [] : [{ role: 'system', content: request.system }]), { role: 'user', content }];
  const body: Record<string, unknown> = {
    model: request.model,
    messages,
    temperature: request.temperature,
    // `max_tokens`, not `max_completion_tokens`: the one every compatible server (vLLM, Ollama, llama.cpp) reads.
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.schema) {
    const title = typeof request.schema.title === 'string' ? request.schema.title.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) : '';
    body.response_format = { type: 'json_schema', json_schema: { name: title || 'answer', schema: request.schema, strict: true } };
  }
  return body;
}

/**
 * Streams one chat completion from `{baseUrl}/chat/completions` (OpenAI or any compatible server);
 * `provider`: the name its calls carry (messages, metrics, limits), `openai` unless the server is another's.
 */
export function openAiCall(settings: Pick<LlmNodeSettings, 'apiKey' | 'baseUrl' | 'timeoutMs'>, provider: string = PROVIDER): LlmCall {
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  return async (request, signal, onText) => {
    const response = await providerFetch({
      provider,
      model: request.model,
      tokens: request.worstCaseTokens ?? 0,
      url,
      headers: { authorization: `Bearer ${settings.apiKey}`, accept: 'text/event-stream' },
      json: chatCompletionBody(request),
      signal,
      timeoutMs: settings.timeoutMs,
    });
    let text = '';
    let refusal = '';
    let usage: TokenUsage | undefined;
    let stopReason: string | undefined;
    // An answered call that fails carries the usage it reported, so that llm-node prices it.
    const answered = <E extends Error>(err: E): E => Object.assign(err, { outcomeUnknown: true }, usage ? { usage } : {});
    for await (const event of readSseEvents(eventStreamBody(response, provider), signal, provider)) {
      if (event.data.trim() === '[DONE]') break;
      const chunk = parseStreamJson<ChatChunk>(event.data, provider);
      if (chunk.error) {
        const message = streamedErrorMessage(chunk.error.message, settings.apiKey);
        throw new AppError({ code: 'unavailable', message: `${provider} failed while streaming: ${message}` });
      }
      const choice = chunk.choices?.[0];
      const delta = choice?.delta;
      if (typeof delta?.content === 'string' && delta.content !== '') {
        text += delta.content;
        onText(delta.content);
      }
      if (typeof delta?.refusal === 'string') refusal += delta.refusal;
      if (choice?.finish_reason) stopReason = choice.finish_reason;
      usage = reportedUsage(chunk.usage) ?? usage;
    }
    // A stream without a finish_reason (no event at all, or cut short of its end) is not a completion.
    if (usage) reportTokenUsage(response, usage.inputTokens + usage.outputTokens);
    if (stopReason === undefined) throw answered(malformedResponse(provider, text === '' ? 'a stream without any completion' : 'a stream that ended without a finish_reason'));
    if (refusal !== '' && text === '') throw answered(new AppError({ code: 'bad_request', message: `${provider} refused to answer: ${refusal.slice(0, 500)}` }));
    return { text, usage, stopReason };
  };
}

/** The token counts of a usage chunk, when both are there and plausible. */
function reportedUsage(reported: ChatChunk['usage']): TokenUsage | undefined {
  const input = reported?.prompt_tokens;
  const output = reported?.completion_tokens;
  if (!Number.isSafeInteger(input) || !Number.isSafeInteger(output) || input! < 0 || output! < 0) return undefined;
  return { inputTokens: input!, outputTokens: output! };
}

/** What a node of this adapter is like, whichever model: built-in or catalog entry. */
export const OPENAI_CHAT_SHAPE = {
  maxTemperature: 2,
  maxOutputTokens: 16_384,
  vision: true,
  // Message framing (a few tokens a message) and the response_format schema's own rendering.
  overheadTokens: (hasSchema: boolean): number => (hasSchema ? 64 : 16),
} as const;

/**
 * `openai-chat`: chat completions of OpenAI or any OpenAI-compatible server. `settings.baseUrl`
 * ends with the API's version, e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`
 * (Ollama), a vLLM server's `/v1`.
 */
export function openAiChatNode(settings: LlmNodeSettings): NodeDefinition {
  return llmNode({
    id: 'openai-chat',
    title: 'Chat (OpenAI-compatible)',
    description:
      'Answers "prompt" (after the optional "system" instructions) with a model of an OpenAI-compatible chat API, streaming ' +
      'the answer. With a JSON Schema in "schema" the answer follows it (structured output) and is also returned parsed as ' +
      '"data". An optional "image" is sent with the prompt, for models that see images. "usage" reports the tokens charged. Cost: input and output tokens at the model\'s price; the reservation ' +
      'assumes the prompt at 3 characters a token and "maxTokens" output tokens.',
    provider: PROVIDER,
    models: settings.models,
    prices: settings.prices,
    ...OPENAI_CHAT_SHAPE,
    call: openAiCall(settings),
    progressIntervalMs: settings.progressIntervalMs,
  });
}
