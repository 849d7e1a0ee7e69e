import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

// Binds signatures to this use of the secret (it also signs blob URLs).
const PURPOSE = 'svc-provider-webhook-v1';
const JOB_KEY = /^[0-9a-f]{32}$/;

/**
 * The key of a step's provider job in webhook URLs and wake-ups: the same for every attempt of the
 * step (a job submitted by a lost attempt calls back to the URL it was given, and the attempt that
 * resumed the job is the one woken). Derived, so URLs carry no run or node id.
 */
export function providerJobKey(runId: string, nodeId: string): string {
  return createHash('sha256').update(`${runId}\n${nodeId}`).digest('hex').slice(0, 32);
}

/**
 * The URLs fal and Replicate call when a job of ours ends:
 * `<base>/hooks/providers/<provider>/<job key>/<signature>`. The signature (HMAC-SHA256 over the
 * provider and key) keeps strangers from waking steps; even a valid call only makes the step poll
 * the provider at once, so nothing a caller posts is taken as the job's result.
 */
export class ProviderWebhookUrls {
  private readonly base: string;
  private readonly secret: Buffer;

  constructor(options: { baseUrl: string; secret: string }) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.secret = Buffer.from(options.secret, 'utf8');
    if (this.secret.length < 32) throw new Error('the provider webhook signing secret must be at least 32 characters (bytes) long');
  }

  private signature(provider: string, key: string): string {
    return createHmac('sha256', this.secret).update(`${PURPOSE}\n${provider}\n${key}`).digest('base64url');
  }

  /** Where `provider` calls back when the job of the step `key` (`providerJobKey`) ends. */
  urlFor(provider: string, key: string): string {
    return `${this.base}/hooks/providers/${encodeURIComponent(provider)}/${key}/${this.signature(provider, key)}`;
  }

  /** Whether a callback's path parts are ones `urlFor` made (the signature compared in constant time). */
  verify(provider: string, key: string, signature: string): boolean {
    if (!JOB_KEY.test(key)) return false;
    const expected = Buffer.from(this.signature(provider, key));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}
