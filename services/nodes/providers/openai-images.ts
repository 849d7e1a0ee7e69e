import type { Artifact } from '../../contract';
import { MAX_IMAGE_BYTES } from '../limits';
import { defineNode, type NodeDefinition } from '../node-definition';
import { connector, ports } from '../spec-builders';
import { downloadResult, offered, priceIn, rehostImage } from './media-rehost';
import { OPENAI, openaiFetch, type OpenAiMediaSettings } from './openai-client';
import { jsonBody, malformedResponse } from './provider-response';

const MAX_IMAGES = 4;
/** OpenAI's longest image prompt (gpt-image-1), in characters. */
const MAX_PROMPT_CHARACTERS = 32_000;

interface ImagesAnswer {
  data?: { b64_json?: string; url?: string }[];
}

/**
 * `openai-image`: POST /images/generations. Images come back as `b64_json` (gpt-image-1 always,
 * DALL·E when asked) or, from some compatible servers, as URLs that we download; either way the
 * bytes are stored in our blob store and only our refs are returned.
 */
export function openaiImageNode(settings: OpenAiMediaSettings): NodeDefinition {
  const prices = settings.imagePrices;
  const models = offered(prices);
  return defineNode({
    spec: {
      id: 'openai-image',
      kind: 'model',
      title: 'Generate image (OpenAI)',
      category: 'image',
      description:
        `Generates "n" images (1 to ${MAX_IMAGES}) from "prompt" with an OpenAI image model. "size" (e.g. 1024x1024) and ` +
        '"quality" are passed to the model as given. "image" is the first result, "images" all of them. Costs per image: ' +
        `${models.names.map((m) => `${m} ${prices[m]}`).join(', ')} micro-USD.`,
      inputs: ports({
        // gpt-image-1's limit; older models take less (dall-e-3 4,000), which the provider refuses.
        prompt: connector('TEXT', { maxLength: MAX_PROMPT_CHARACTERS }),
        model: connector('TEXT', { defaultValue: models.first, optionValues: models.names }),
        n: connector('INT', { defaultValue: 1, minValue: 1, maxValue: MAX_IMAGES }),
        size: connector('TEXT', { isOptional: true }),
        quality: connector('TEXT', { isOptional: true }),
      }),
      outputs: ports({ image: connector('IMAGE'), images: connector('IMAGE', { isArray: true }) }),
    },
    estimate: (inputs) => priceIn(prices, inputs.model) * Number(inputs.n),
    price: (inputs, outputs) => priceIn(prices, inputs.model) * (outputs.images as unknown[]).length,
    async execute(inputs, ctx) {
      const model = String(inputs.model);
      const body: Record<string, unknown> = { model, prompt: inputs.prompt, n: inputs.n };
      if (inputs.size !== undefined) body.size = inputs.size;
      if (inputs.quality !== undefined) body.quality = inputs.quality;
      // DALL·E answers with URLs unless asked; gpt-image models always send b64_json and refuse the field.
      if (model.startsWith('dall-e')) body.response_format = 'b64_json';
      ctx.progress(`generating ${String(inputs.n)} image(s) with ${model}`);
      const response = await openaiFetch(settings, ctx.signal, '/images/generations', { json: body });
      const answer = await jsonBody<ImagesAnswer>(response, OPENAI, (MAX_IMAGES + 1) * MAX_IMAGE_BYTES * 1.4);
      const data = (Array.isArray(answer.data) ? answer.data : []).slice(0, Number(inputs.n));
      if (data.length === 0) throw malformedResponse(OPENAI, 'a body without images (no "data")');
      const images: Artifact[] = [];
      for (const item of data) {
        let bytes: Buffer;
        if (typeof item !== 'object' || item === null) throw malformedResponse(OPENAI, 'an image entry that is not an object');
        if (typeof item.b64_json === 'string') bytes = Buffer.from(item.b64_json, 'base64');
        else if (typeof item.url === 'string') bytes = await downloadResult({ provider: OPENAI, signal: ctx.signal, timeoutMs: settings.timeoutMs, baseUrl: settings.baseUrl, artifacts: ctx.artifacts }, item.url, MAX_IMAGE_BYTES);
        else throw malformedResponse(OPENAI, 'an image without b64_json or url');
        images.push(await rehostImage(OPENAI, bytes, ctx));
      }
      return { image: images[0], images };
    },
  });
}
