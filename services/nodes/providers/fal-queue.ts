import type { Artifact } from '../../contract';
import { MAX_IMAGE_BYTES } from '../limits';
import { defineNode, type NodeContext, type NodeDefinition } from '../node-definition';
import { connector, ports } from '../spec-builders';
import { offered, priceIn, rehostImage, resultFileBytes } from './media-rehost';
import { providerFetch } from './provider-http';
import { jsonBody, malformedResponse } from './provider-response';
import { jobUrl, nextPoll, withCancel, type JobHost } from './provider-queue';

/** How to reach fal's queue API: the key, the base URL, the request timeout and the poll interval. */
export interface FalConnection {
  key: string;
  /** The queue API, e.g. https://queue.fal.run. */
  baseUrl: string;
  timeoutMs: number;
  pollMs: number;
}

/** What the fal node needs from the configuration. */
export interface FalSettings extends FalConnection {
  /** App id (e.g. fal-ai/flux/schnell) → worst-case micro-USD per image. */
  apps: Record<string, number>;
}

export const FAL = 'fal';
const MAX_IMAGES = 4;

interface FalSubmitted {
  request_id?: string;
  status_url?: string;
  response_url?: string;
  cancel_url?: string;
}

/** A submitted fal request, as recorded with its attempt. */
interface FalJob {
  statusUrl: string;
  responseUrl: string;
  cancelUrl: string;
  requestId?: string;
}

/** The recorded job of a lost attempt, checked again (it reaches the provider with our key): undefined when there is none. */
function resumedFalJob(recorded: unknown, host: JobHost): FalJob | undefined {
  if (recorded === undefined || recorded === null || typeof recorded !== 'object') return undefined;
  const job = recorded as Record<string, unknown>;
  return {
    statusUrl: jobUrl(host, job.statusUrl, 'status_url'),
    responseUrl: jobUrl(host, job.responseUrl, 'response_url'),
    cancelUrl: jobUrl(host, job.cancelUrl, 'cancel_url'),
    ...(typeof job.requestId === 'string' ? { requestId: job.requestId } : {}),
  };
}

/**
 * One request through the fal queue API: submits `input` to `{base}/{app}`, polls `status_url`
 * until COMPLETED and returns the JSON of `response_url`. On abort (run cancelled or failed) it
 * calls `PUT cancel_url` so fal stops the job. Used by `fal-image` and by catalog entries.
 */
export async function falQueueRequest(settings: FalConnection, app: string, input: Record<string, unknown>, ctx: NodeContext): Promise<Record<string, unknown>> {
  const auth = { authorization: `Key ${settings.key}` };
  const queueHost: JobHost = { provider: FAL, baseUrl: settings.baseUrl, answer: 'an answer', credential: 'key' };
  const state = { submitted: false, finished: false };
  let cancelUrl: string | undefined;
  const call = (signal: AbortSignal) => ({ provider: FAL, model: app, headers: auth, signal, timeoutMs: settings.timeoutMs });
  return withCancel(
    ctx.signal,
    async (signal) => {
      // A lost attempt's request goes on (submitted once, paid once); else one is submitted and recorded before the wait.
      const resumed = resumedFalJob(ctx.providerJob?.resumed, queueHost);
      let job: FalJob;
      if (resumed) {
        job = resumed;
        ctx.progress(`fal request ${job.requestId ?? ''} resumed after a worker was lost`.replace('  ', ' '));
      } else {
        // fal calls the webhook when the request ends, so the step polls at once instead of on its timer.
        const webhook = ctx.providerJob?.webhookUrl(FAL);
        const submitUrl = `${settings.baseUrl}/${app}${webhook ? `?fal_webhook=${encodeURIComponent(webhook)}` : ''}`;
        const submitted = await jsonBody<FalSubmitted>(await providerFetch({ ...call(signal), url: submitUrl, json: input }), FAL);
        job = {
          statusUrl: jobUrl(queueHost, submitted.status_url, 'status_url'),
          responseUrl: jobUrl(queueHost, submitted.response_url, 'response_url'),
          cancelUrl: jobUrl(queueHost, submitted.cancel_url, 'cancel_url'),
          ...(submitted.request_id ? { requestId: submitted.request_id } : {}),
        };
      }
      const { statusUrl, responseUrl } = job;
      cancelUrl = job.cancelUrl;
      state.submitted = true;
      if (!resumed) {
        await ctx.providerJob?.submitted(job);
        ctx.progress(job.requestId ? `fal request ${job.requestId} queued` : 'fal request queued');
      }
      let last = '';
      for (;;) {
        const status = await jsonBody<{ status?: string; queue_position?: number }>(await providerFetch({ ...call(signal), url: statusUrl }), FAL);
        if (status.status === 'COMPLETED') break;
        if (status.status !== 'IN_QUEUE' && status.status !== 'IN_PROGRESS') throw malformedResponse(FAL, `an unknown status ${JSON.stringify(status.status ?? null)}`);
        const note = status.status === 'IN_QUEUE' ? `queued at position ${status.queue_position ?? '?'}` : 'in progress';
        if (note !== last) ctx.progress(`fal: ${(last = note)}`);
        await nextPoll(ctx, settings.pollMs, signal);
      }
      const answer = await jsonBody<Record<string, unknown>>(await providerFetch({ ...call(signal), url: responseUrl }), FAL);
      state.finished = true;
      return answer;
    },
    (signal) => providerFetch({ ...call(signal), url: cancelUrl!, method: 'PUT', retries: 0 }),
    state,
  );
}

/**
 * `fal-image`: the fal queue API (see `falQueueRequest`), re-hosting every image.
 */
export function falImageNode(settings: FalSettings): NodeDefinition {
  const apps = offered(settings.apps);
  return defineNode({
    spec: {
      id: 'fal-image',
      kind: 'model',
      title: 'Generate image (fal)',
      category: 'image',
      description:
        `Generates "num_images" images (1 to ${MAX_IMAGES}) from "prompt" with a fal app. "image_size" (e.g. square_hd, ` +
        'landscape_16_9) and "seed" are passed as given; "image" is the first result, "images" all of them. Costs per ' +
        `image: ${apps.names.map((a) => `${a} ${settings.apps[a]}`).join(', ')} micro-USD.`,
      inputs: ports({
        prompt: connector('TEXT'),
        app: connector('TEXT', { defaultValue: apps.first, optionValues: apps.names }),
        num_images: connector('INT', { defaultValue: 1, minValue: 1, maxValue: MAX_IMAGES }),
        image_size: connector('TEXT', { isOptional: true }),
        seed: connector('INT', { isOptional: true, minValue: 0 }),
      }),
      outputs: ports({ image: connector('IMAGE'), images: connector('IMAGE', { isArray: true }) }),
    },
    estimate: (inputs) => priceIn(settings.apps, inputs.app) * Number(inputs.num_images),
    price: (inputs, outputs) => priceIn(settings.apps, inputs.app) * (outputs.images as unknown[]).length,
    async execute(inputs, ctx) {
      const app = String(inputs.app);
      const input: Record<string, unknown> = { prompt: inputs.prompt, num_images: inputs.num_images };
      if (inputs.image_size !== undefined) input.image_size = inputs.image_size;
      if (inputs.seed !== undefined) input.seed = inputs.seed;
      const result = await falQueueRequest(settings, app, input, ctx);
      const found = (Array.isArray(result.images) ? (result.images as { url?: unknown }[]) : []).slice(0, Number(inputs.num_images));
      if (found.length === 0) throw malformedResponse(FAL, 'a result without images');
      const images: Artifact[] = [];
      for (const item of found) {
        if (typeof item?.url !== 'string') throw malformedResponse(FAL, 'an image without a url');
        images.push(await rehostImage(FAL, await resultFileBytes({ provider: FAL, signal: ctx.signal, timeoutMs: settings.timeoutMs, baseUrl: settings.baseUrl, artifacts: ctx.artifacts }, item.url, MAX_IMAGE_BYTES), ctx));
      }
      return { image: images[0], images };
    },
  });
}
