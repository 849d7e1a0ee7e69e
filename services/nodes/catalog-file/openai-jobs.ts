import { invalidInput } from '../node-inputs';
import { OPENAI, openaiFetch } from '../providers/openai-client';
import { expectMediaType, jsonBody, malformedResponse, readCapped } from '../providers/provider-response';
import type { MediaProvider } from './catalog-entry';
import type { MediaJob } from './media-entry-node';

/** How to reach an OpenAI-compatible API: its root (up to and including /v1), key and request timeout. */
export interface OpenAiConnection {
  apiKey: string;
  baseUrl: string;
  timeoutMs: number;
}

const MAX_SPEECH_BYTES = 64 * 1024 * 1024;
const MAX_JSON_BYTES = 5 * 64 * 1024 * 1024 * 1.4;

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/**
 * The OpenAI-compatible media endpoints as catalog jobs, over the same client (`openaiFetch`)
 * the openai-* nodes use. The input object is the request body (with `model`); the answer is
 * the JSON the endpoint returns, except speech, whose audio bytes are answered as
 * `{ audio: "data:<type>;base64,…" }` so an output can map `from: audio`.
 */
export function openAiJob(provider: Extract<MediaProvider, `openai-${string}`>, connection: OpenAiConnection, model: string, node: string): MediaJob {
  const base = { provider: OPENAI, baseUrl: connection.baseUrl, timeoutMs: connection.timeoutMs };
  switch (provider) {
    case 'openai-images':
      return {
        ...base,
        async run(input, ctx) {
          const answer = await jsonBody<{ usage?: { input_tokens?: unknown; output_tokens?: unknown } }>(await openaiFetch(connection, ctx.signal, '/images/generations', { json: { model, ...input } }), OPENAI, MAX_JSON_BYTES);
          const measured: Record<string, number> = {};
          if (finite(answer.usage?.input_tokens)) measured.input_tokens = answer.usage.input_tokens;
          if (finite(answer.usage?.output_tokens)) measured.output_tokens = answer.usage.output_tokens;
          return { answer, measured };
        },
      };
    case 'openai-embeddings':
      return {
        ...base,
        async run(input, ctx) {
          const answer = await jsonBody<{ usage?: { prompt_tokens?: unknown } }>(await openaiFetch(connection, ctx.signal, '/embeddings', { json: { model, encoding_format: 'float', ...input } }), OPENAI);
          const measured: Record<string, number> = finite(answer.usage?.prompt_tokens) ? { input_tokens: answer.usage.prompt_tokens } : {};
          return { answer, measured };
        },
      };
    case 'openai-speech':
      return {
        ...base,
        async run(input, ctx) {
          const response = await openaiFetch(connection, ctx.signal, '/audio/speech', { json: { model, ...input } });
          expectMediaType(response, OPENAI, (type) => type.startsWith('audio/') || type === 'application/octet-stream', 'audio');
          const bytes = await readCapped(response, MAX_SPEECH_BYTES, OPENAI);
          if (bytes.length === 0) throw malformedResponse(OPENAI, 'an empty audio body');
          return { answer: { audio: `data:application/octet-stream;base64,${bytes.toString('base64')}` }, measured: {} };
        },
      };
    case 'openai-transcribe':
      return {
        ...base,
        async run(input, ctx) {
          // Multipart, as the endpoint takes it: media inputs (data: URIs) as files, the rest as fields.
          const form = new FormData();
          form.set('model', model);
          for (const [field, value] of Object.entries(input)) {
            const inline = typeof value === 'string' ? /^data:([^;,]*);base64,(.*)$/s.exec(value) : null;
            if (inline) {
              const type = inline[1] || 'application/octet-stream';
              form.set(field, new Blob([Buffer.from(inline[2]!, 'base64')], { type }), `${field}.${type.split('/')[1]?.replace(/^mpeg$/, 'mp3') ?? 'bin'}`);
            } else if (typeof value === 'object' && value !== null) {
              throw invalidInput(node, field, 'must be a single value: a transcription request takes no lists or objects');
            } else {
              form.set(field, String(value));
            }
          }
          const encoded = new Request('http://multipart.invalid/', { method: 'POST', body: form });
          const body = new Uint8Array(await encoded.arrayBuffer());
          const answer = await jsonBody<{ duration?: unknown }>(await openaiFetch(connection, ctx.signal, '/audio/transcriptions', { body, contentType: encoded.headers.get('content-type')! }), OPENAI);
          const measured: Record<string, number> = finite(answer.duration) ? { seconds: answer.duration } : {};
          return { answer, measured };
        },
      };
  }
}
