import type { Artifact } from '../../contract';
import { AppError } from '../../platform/app-error';
import { MAX_IMAGE_BYTES } from '../limits';
import { defineNode, type NodeContext, type NodeDefinition } from '../node-definition';
import { connector, ports } from '../spec-builders';
import { downloadResult, offered, priceIn, rehostImage } from './media-rehost';
import { providerFetch } from './provider-http';
import { jsonBody, malformedResponse } from './provider-response';
import { jobUrl, nextPoll, withCancel, type JobHost } from './provider-queue';

/** How to reach Replicate's API: the token, the base URL, the request timeout and the poll interval. */
export interface ReplicateConnection {
  token: string;
  /** e.g. https://api.replicate.com (without /v1). */
  baseUrl: string;
  timeoutMs: number;
  pollMs: number;
}

/** What the Replicate node needs from the configuration. */
export interface ReplicateSettings extends ReplicateConnection {
  /** `owner/name` or `owner/name:version` → worst-case micro-USD per output image. */
  models: Record<string, number>;
}

export const REPLICATE = 'replicate';
/** Where a prediction ends; `starting` and `processing` are polled. */
const FINAL_STATUSES = new Set(['succeeded', 'failed', 'canceled']);
const MAX_IMAGES = 4;

/** A prediction as Replicate answers it; `metrics` carries what it measured (predict_time, token counts). */
export interface Prediction {
  id?: string;
  status?: string;
  output?: unknown;
  error?: unknown;
  urls?: { get?: string; cancel?: string };
  metrics?: Record<string, unknown>;
}

/** Where to create a prediction of a model: the model's endpoint, or /v1/predictions with a pinned version. */
function createRequest(settings: ReplicateConnection, model: string, input: Record<string, unknown>, webhook: string | undefined): { url: string; json: unknown } {
  const [name, version] = model.split(':', 2) as [string, string | undefined];
  // Replicate calls the webhook once the prediction is done, so the step polls at once instead of on its timer.
  const callback = webhook ? { webhook, webhook_events_filter: ['completed'] } : {};
  if (version) return { url: `${settings.baseUrl}/v1/predictions`, json: { version, input, ...callback } };
  return { url: `${settings.baseUrl}/v1/models/${name}/predictions`, json: { input, ...callback } };
}

/**
 * One prediction: created with `Prefer: wait` (most fast models answer within it), polled at
 * `urls.get` otherwise; resolves with the succeeded prediction. On abort it calls
 * `POST urls.cancel` so Replicate stops the prediction. A prediction that failed or was
 * cancelled is `bad_request` with Replicate's reason. Used by `replicate-image` and by catalog entries.
 */
export async function replicatePrediction(settings: ReplicateConnection, model: string, input: Record<string, unknown>, ctx: NodeContext): Promise<Prediction> {
  const auth = { authorization: `Bearer ${settings.token}` };
  const apiHost: JobHost = { provider: REPLICATE, baseUrl: settings.baseUrl, answer: 'a prediction', credential: 'token' };
  // Replicate holds a request at most 60 s; keep the wait well inside our own request timeout.
  const waitSeconds = Math.max(1, Math.min(60, Math.floor(settings.timeoutMs / 2000)));
  const state = { submitted: false, finished: false };
  let cancelUrl: string | undefined;
  const call = (signal: AbortSignal) => ({ provider: REPLICATE, model, headers: auth, signal, timeoutMs: settings.timeoutMs });
  const prediction = await withCancel(
    ctx.signal,
    async (signal) => {
      // A lost attempt's prediction goes on (created once, paid once); else one is created and recorded before the wait.
      const resumed = ctx.providerJob?.resumed as { getUrl?: unknown; cancelUrl?: unknown; id?: unknown } | null | undefined;
      let current: Prediction;
      let getUrl: string;
      if (resumed && typeof resumed === 'object') {
        getUrl = jobUrl(apiHost, resumed.getUrl, 'prediction URL');
        cancelUrl = jobUrl(apiHost, resumed.cancelUrl, 'cancel URL');
        state.submitted = true;
        current = await jsonBody<Prediction>(await providerFetch({ ...call(signal), url: getUrl }), REPLICATE);
        ctx.progress(`replicate prediction ${current.id ?? ''} resumed after a worker was lost`.replace('  ', ' '));
      } else {
        const create = createRequest(settings, model, input, ctx.providerJob?.webhookUrl(REPLICATE));
        // Not retried: a retried create could start (and bill) a second prediction.
        current = await jsonBody<Prediction>(
          await providerFetch({ ...call(signal), url: create.url, json: create.json, headers: { ...auth, prefer: `wait=${waitSeconds}` }, retries: 0 }),
          REPLICATE,
        );
        cancelUrl = jobUrl(apiHost, current.urls?.cancel, 'cancel URL');
        getUrl = jobUrl(apiHost, current.urls?.get, 'prediction URL');
        state.submitted = true;
        if (current.status === 'starting' || current.status === 'processing') await ctx.providerJob?.submitted({ getUrl, cancelUrl, ...(current.id ? { id: current.id } : {}) });
        ctx.progress(`replicate prediction ${current.id ?? ''} ${current.status ?? ''}`.trim());
      }
      while (current.status === 'starting' || current.status === 'processing') {
        await nextPoll(ctx, settings.pollMs, signal);
        current = await jsonBody<Prediction>(await providerFetch({ ...call(signal), url: getUrl }), REPLICATE);
      }
      if (!FINAL_STATUSES.has(String(current.status))) throw malformedResponse(REPLICATE, `a prediction with an unknown status ${JSON.stringify(current.status ?? null)}`);
      state.finished = true;
      return current;
    },
    (signal) => providerFetch({ ...call(signal), url: cancelUrl!, method: 'POST', retries: 0 }),
    state,
  );
  if (prediction.status !== 'succeeded') {
    const reason = typeof prediction.error === 'string' ? prediction.error : `status ${String(prediction.status)}`;
    throw new AppError({ code: 'bad_request', message: `replicate prediction did not succeed: ${reason.slice(0, 500)}` });
  }
  return prediction;
}

/** `replicate-image`: one prediction (see `replicatePrediction`), re-hosting every output image. */
export function replicateImageNode(settings: ReplicateSettings): NodeDefinition {
  const models = offered(settings.models);
  return defineNode({
    spec: {
      id: 'replicate-image',
      kind: 'model',
      title: 'Generate image (Replicate)',
      category: 'image',
      description:
        `Generates "num_outputs" images (1 to ${MAX_IMAGES}) from "prompt" with a Replicate model; "input" adds further ` +
        'model inputs (e.g. aspect_ratio). "image" is the first result, "images" all of them. Costs per image: ' +
        `${models.names.map((m) => `${m} ${settings.models[m]}`).join(', ')} micro-USD.`,
      inputs: ports({
        prompt: connector('TEXT'),
        model: connector('TEXT', { defaultValue: models.first, optionValues: models.names }),
        num_outputs: connector('INT', { defaultValue: 1, minValue: 1, maxValue: MAX_IMAGES }),
        input: connector('STRUCTURED', { isOptional: true }),
      }),
      outputs: ports({ image: connector('IMAGE'), images: connector('IMAGE', { isArray: true }) }),
    },
    estimate: (inputs) => priceIn(settings.models, inputs.model) * Number(inputs.num_outputs),
    price: (inputs, outputs) => priceIn(settings.models, inputs.model) * (outputs.images as unknown[]).length,
    async execute(inputs, ctx) {
      const extra = inputs.input;
      if (extra !== undefined && (typeof extra !== 'object' || extra === null || Array.isArray(extra))) {
        throw new AppError({ code: 'validation_failed', message: 'node "replicate-image": input "input" must be a JSON object of model inputs' });
      }
      // Our ports win over "input", so the reserve (num_outputs × price) bounds the charge.
      const input = { ...(extra as Record<string, unknown> | undefined), prompt: inputs.prompt, num_outputs: inputs.num_outputs };
      const prediction = await replicatePrediction(settings, String(inputs.model), input, ctx);
      const urls = (Array.isArray(prediction.output) ? prediction.output : [prediction.output]).slice(0, Number(inputs.num_outputs));
      if (urls.length === 0 || !urls.every((u): u is string => typeof u === 'string')) throw malformedResponse(REPLICATE, 'a prediction without output image URLs');
      const images: Artifact[] = [];
      for (const url of urls) {
        images.push(await rehostImage(REPLICATE, await downloadResult({ provider: REPLICATE, signal: ctx.signal, timeoutMs: settings.timeoutMs, baseUrl: settings.baseUrl, artifacts: ctx.artifacts }, url, MAX_IMAGE_BYTES), ctx));
      }
      return { image: images[0], images };
    },
  });
}
