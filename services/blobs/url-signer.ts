import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'expired' | 'bad_signature' };

/**
 * The service's own signed blob URLs: `<base>/blobs/<key>?expires=<unix s>&signature=<hmac>`.
 * These are what callers receive, never a provider's or the store's own URL, so blobs can move
 * between drivers and access stays under the service's control.
 */
export class BlobUrlSigner {
  constructor(private readonly options: { publicBaseUrl: string; secret: string }) {
    if (options.secret.length < 32) throw new Error('the blob signing secret must be at least 32 characters');
  }

  private signature(key: string, expires: number): string {
    return createHmac('sha256', this.options.secret).update(`${key}\n${expires}`).digest('base64url');
  }

  /** A URL for `key` valid until `expiresAt`. */
  sign(key: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    const path = key.split('/').map(encodeURIComponent).join('/');
    return `${this.options.publicBaseUrl}/blobs/${path}?expires=${expires}&signature=${this.signature(key, expires)}`;
  }

  /** Checks the query parameters of a blob URL, in constant time for the signature. */
  verify(key: string, expires: string | undefined, signature: string | undefined, now: Date = new Date()): SignatureCheck {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return { ok: false, reason: 'missing' };
    const expected = Buffer.from(this.signature(key, Number(expires)));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'bad_signature' };
    if (Number(expires) * 1000 <= now.getTime()) return { ok: false, reason: 'expired' };
    return { ok: true };
  }
}
