import { AppError } from '../../platform/app-error';
import type { NodeDefinition } from '../node-definition';
import type { LlmCall, LlmNodeSettings, LlmRequest } from './llm-node';
import { llmNode } from './llm-node';
import { providerFetch } from './provider-http';
import { reportTokenUsage } from './provider-scope';
import { malformedResponse } from './provider-response';
import { eventStreamBody, parseStreamJson, readSseEvents, streamedErrorMessage } from './sse-lines';

const PROVIDER = 'anthropic';
export const ANTHROPIC_VERSION = '2023-06-01';
/** The tool a structured answer is requested through (forced with `tool_choice`). */
export const ANSWER_TOOL = 'answer';

interface StreamEvent {
  type?: string;
  message?: { usage?: { input_tokens?: number; output_tokens?: number } };
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
  usage?: { output_tokens?: number };
  error?: { type?: string; message?: string };
}

/**
 * The request body of `POST /v1/messages` (streamed). Structured output uses tool use: one tool
 * whose `input_schema` is the caller's schema, forced with `tool_choice`, so the model's answer
 * is the tool's input (streamed as `input_json_delta`), JSON that the API has checked to be an
 * object.
 */
export function messagesBody(request: LlmRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.maxTokens,
    // With an image, the user message is content blocks: the image (base64) first, as Anthropic advises, then the text.
    messages: [{
      role: 'user',
      content: request.image
        ? [{ type: 'image', source: { type: 'base64', media_type: request.image.mimeType, data: request.image.base64 } }, { type: 'text', text: request.prompt }]
        : request.prompt,
    }],
    temperature: request.temperature,
    stream: true,
  };
  if (request.system !== undefined) body.system = request.system;
  if (request.schema) {
    body.tools = [{ name: ANSWER_TOOL, description: 'Gives the answer in the required structure.', input_schema: request.schema }];
    body.tool_choice = { type: 'tool', name: ANSWER_TOOL };
  }
  return body;
}

/** Streams one message from `{baseUrl}/v1/messages`. */
export function anthropicCall(settings: Pick<LlmNodeSettings, 'apiKey' | 'baseUrl' | 'timeoutMs'>): LlmCall {
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/v1/messages`;
  return async (request, signal, onText) => {
    const response = await providerFetch({
      provider: PROVIDER,
      model: request.model,
      tokens: request.worstCaseTokens ?? 0,
      url,
      headers: { 'x-api-key': settings.apiKey, 'anthropic-version': ANTHROPIC_VERSION, accept: 'text/event-stream' },
      json: messagesBody(request),
      signal,
      timeoutMs: settings.timeoutMs,
    });
    let text = '';
    let inputTokens: number | undefined;
    // Final only once a message_delta reported it (message_start's count is the first token's).
    let outputTokens: number | undefined;
    let stopReason: string | undefined;
    let stopped = false;
    for await (const event of readSseEvents(eventStreamBody(response, PROVIDER), signal, PROVIDER)) {
      const data = parseStreamJson<StreamEvent>(event.data, PROVIDER);
      switch (data.type ?? event.event) {
        case 'message_start':
          inputTokens = data.message?.usage?.input_tokens;
          break;
        case 'content_block_delta': {
          const piece = data.delta?.type === 'input_json_delta' ? data.delta.partial_json : data.delta?.type === 'text_delta' ? data.delta.text : undefined;
          if (typeof piece === 'string' && piece !== '') {
            text += piece;
            onText(piece);
          }
          break;
        }
        case 'message_delta':
          if (Number.isSafeInteger(data.usage?.output_tokens)) outputTokens = data.usage!.output_tokens;
          if (data.delta?.stop_reason) stopReason = data.delta.stop_reason;
          break;
        case 'message_stop':
          stopped = true;
          break;
        case 'error': {
          // overloaded_error, api_error… mid-stream: transient for the step executor.
          const message = streamedErrorMessage(data.error?.message, settings.apiKey);
          throw new AppError({ code: data.error?.type === 'invalid_request_error' ? 'bad_request' : 'unavailable', message: `${PROVIDER} failed while streaming (${data.error?.type ?? 'error'}): ${message}` });
        }
        default:
          break; // ping, content_block_start, content_block_stop
      }
      if (stopped) break;
    }
    const usage = Number.isSafeInteger(inputTokens) && Number.isSafeInteger(outputTokens) && inputTokens! >= 0 && outputTokens! >= 0 ? { inputTokens: inputTokens!, outputTokens: outputTokens! } : undefined;
    if (usage) reportTokenUsage(response, usage.inputTokens + usage.outputTokens);
    // A stream without message_stop (no event at all, or cut short of its end) is not a completion;
    // it carries the usage it reported, so that llm-node prices it.
    if (!stopped) throw Object.assign(malformedResponse(PROVIDER, text === '' ? 'a stream without any message' : 'a stream that ended before message_stop'), usage ? { usage } : {});
    return { text, usage, stopReason };
  };
}

/** What a node of this adapter is like, whichever model: built-in or catalog entry. */
export const ANTHROPIC_SHAPE = {
  maxTemperature: 1,
  maxOutputTokens: 8192,
  vision: true,
  // Message framing; a forced tool adds Anthropic's tool-use system prompt (about 350 tokens) and the tool's definition.
  overheadTokens: (hasSchema: boolean): number => (hasSchema ? 512 : 16),
} as const;

/**
 * `anthropic-messages`: Claude models through the Anthropic Messages API. `settings.baseUrl`,
 * e.g. `https://api.anthropic.com`, is without the path `/v1/messages`, which is appended.
 */
export function anthropicMessagesNode(settings: LlmNodeSettings): NodeDefinition {
  return llmNode({
    id: 'anthropic-messages',
    title: 'Chat (Anthropic)',
    description:
      'Answers "prompt" (after the optional "system" instructions) with a Claude model through the Anthropic Messages API, ' +
      'streaming the answer. With a JSON Schema (type object) in "schema" the answer is requested through a forced tool ' +
      'call with that schema: "text" is its JSON and "data" the parsed object. An optional "image" is sent with the prompt. "usage" reports the tokens charged. Cost: ' +
      'input and output tokens at the model\'s price; the reservation assumes the prompt at 3 characters a token and ' +
      '"maxTokens" output tokens.',
    provider: PROVIDER,
    models: settings.models,
    prices: settings.prices,
    ...ANTHROPIC_SHAPE,
    call: anthropicCall(settings),
    progressIntervalMs: settings.progressIntervalMs,
  });
}
