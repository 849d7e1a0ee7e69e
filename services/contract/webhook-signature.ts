/**
 * The Standard Webhooks format the service signs deliveries in (docs/webhooks.md), shared by the
 * signer (the service) and the verifier (the SDK): the headers, the signed content, the secret's
 * prefix. The HMAC itself is computed by each side with its own crypto.
 */
export const WEBHOOK_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;

/** Secrets are `whsec_` and the base64 of the key's bytes. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** What is signed: `<webhook-id>.<webhook-timestamp>.<body>`. */
export function webhookSignedContent(id: string, timestamp: string | number, body: string): string {
  return `${id}.${timestamp}.${body}`;
}

/** The HMAC key of a secret: the bytes its base64 part encodes. */
export function webhookSecretKeyBase64(secret: string): string {
  return secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret;
}
