import { Router, type Request, type Response } from 'express';
import { AppError } from '../../platform/app-error';
import type { ProviderWebhookUrls } from '../../platform/provider-webhook-urls';

/** The providers whose jobs are parked and may call back: fal (`fal_webhook`) and Replicate (`webhook`). */
const CALLING_PROVIDERS = new Set(['fal', 'replicate']);

export interface ProviderWebhookRouteDeps {
  urls: ProviderWebhookUrls;
  /** Tells the workers that the job of step `jobKey` ended (Redis pub/sub). */
  announce(jobKey: string): Promise<void>;
  observe(provider: string, outcome: 'woke' | 'refused' | 'unavailable'): void;
}

/**
 * `POST /hooks/providers/<provider>/<job key>/<signature>`: fal or Replicate says a job of ours
 * ended. The body is not read: the call only wakes the step waiting on the job, which asks the
 * provider itself for the outcome (so a forged or replayed call can do no more than bring a poll
 * forward). A URL this service did not sign is 403; a Redis that does not take the wake-up is
 * 503, which both providers retry.
 */
export function createProviderWebhookRouter(deps: ProviderWebhookRouteDeps): Router {
  const router = Router();
  router.post('/hooks/providers/:provider/:key/:signature', async (req: Request<{ provider: string; key: string; signature: string }>, res: Response) => {
    res.locals.route = '/hooks/providers/:provider/:key/:signature';
    req.resume();
    const { provider, key, signature } = req.params;
    if (!CALLING_PROVIDERS.has(provider)) {
      throw new AppError({ code: 'not_found', message: `no provider "${provider}" calls back here; provider webhooks are for ${[...CALLING_PROVIDERS].join(' and ')}` });
    }
    if (!deps.urls.verify(provider, key, signature)) {
      deps.observe(provider, 'refused');
      throw new AppError({ code: 'forbidden', message: 'this provider webhook URL was not signed by this service; providers are given it with each job, use it exactly as given' });
    }
    try {
      await deps.announce(key);
    } catch {
      deps.observe(provider, 'unavailable');
      throw new AppError({ code: 'unavailable', message: 'the service could not pass this call on to its workers just now; retry it (the job is still polled meanwhile)' });
    }
    deps.observe(provider, 'woke');
    res.status(200).json({ received: true });
  });
  return router;
}
