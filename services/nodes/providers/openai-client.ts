import { providerFetch } from './provider-http';

/** What the OpenAI(-compatible) media nodes need from the configuration. */
export interface OpenAiMediaSettings {
  /** Empty: no OpenAI media node is offered. */
  apiKey: string;
  /** Up to and including `/v1`, without a trailing slash. */
  baseUrl: string;
  timeoutMs: number;
  /** Model → worst-case micro-USD per image. */
  imagePrices: Record<string, number>;
  /** Model → micro-USD per million input tokens. */
  embeddingPrices: Record<string, number>;
  /** Model → micro-USD per million characters. */
  ttsPrices: Record<string, number>;
  ttsVoices: string[];
  /** Model → micro-USD per started minute of audio. */
  transcribePrices: Record<string, number>;
}

export const OPENAI = 'openai';

/** A request to the OpenAI(-compatible) API with our key, under the run's signal. */
export function openaiFetch(
  settings: Pick<OpenAiMediaSettings, 'apiKey' | 'baseUrl' | 'timeoutMs'>,
  signal: AbortSignal,
  path: string,
  payload: { json: unknown } | { body: Uint8Array; contentType: string },
): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${settings.apiKey}` };
  if ('body' in payload) headers['content-type'] = payload.contentType;
  const model = 'json' in payload ? (payload.json as { model?: unknown } | null)?.model : undefined;
  return providerFetch({
    provider: OPENAI,
    ...(typeof model === 'string' ? { model } : {}),
    url: `${settings.baseUrl}${path}`,
    method: 'POST',
    headers,
    ...('json' in payload ? { json: payload.json } : { body: payload.body }),
    signal,
    timeoutMs: settings.timeoutMs,
  });
}
