import { createHmac, timingSafeEqual } from 'node:crypto';
import { WEBHOOK_HEADERS, webhookSecretKeyBase64, webhookSignedContent, type RunEvent } from '../../../contract';

/** A webhook delivery as the service sends it (docs/webhooks.md). */
export interface WebhookDelivery {
  type: RunEvent['type'];
  timestamp: string;
  data: { runId: string; seq: number; event: RunEvent };
}

/** A delivery that is not from the service, or too old or new to trust: answer it 400 and drop it. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyWebhookOptions {
  /** How far the delivery's timestamp may be from now, seconds (default 300): older is a replay, newer a clock to fix. */
  toleranceSeconds?: number;
  /** The time to judge it by (default now). */
  now?: Date;
}

type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: Headers, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name] ?? (headers as Record<string, string | string[] | undefined>)[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Verifies a webhook delivery (Standard Webhooks, `v1` HMAC-SHA256) with your organization's
 * secret (`GET /v1/webhooks/secret`) and returns its parsed body; throws
 * {@link WebhookVerificationError} when the signature does not match, a header is missing, or the
 * timestamp is outside the tolerance (a replayed delivery). Pass the body exactly as received
 * (the raw text, not re-serialized JSON) and the request's headers (a Node `IncomingHttpHeaders`
 * or a fetch `Headers`). A delivery carries one `webhook-id` per event, the same on every retry:
 * keep the ones you handled to drop a repeat.
 */
export function verifyWebhook(secret: string, headers: Headers, body: string | Uint8Array, options: VerifyWebhookOptions = {}): WebhookDelivery {
  const id = header(headers, WEBHOOK_HEADERS.id);
  const timestamp = header(headers, WEBHOOK_HEADERS.timestamp);
  const signatures = header(headers, WEBHOOK_HEADERS.signature);
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError(`missing ${[!id && WEBHOOK_HEADERS.id, !timestamp && WEBHOOK_HEADERS.timestamp, !signatures && WEBHOOK_HEADERS.signature].filter(Boolean).join(', ')} header`);
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds)) throw new WebhookVerificationError(`${WEBHOOK_HEADERS.timestamp} is not a number of seconds`);
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - seconds) > tolerance) throw new WebhookVerificationError(`the delivery's timestamp is ${now - seconds} s from now, beyond the ${tolerance} s tolerance`);
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const expected = createHmac('sha256', Buffer.from(webhookSecretKeyBase64(secret), 'base64')).update(webhookSignedContent(id, timestamp, text)).digest();
  // The header may carry several signatures (during a secret's rotation), space-separated.
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('the signature does not match: the delivery was not signed with this secret, or its body was changed');
  return JSON.parse(text) as WebhookDelivery;
}
