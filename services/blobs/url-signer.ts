import { createHmac, timingSafeEqual } from 'node:crypto';
import { checkBlobKey } from './blob-key';

/** The outcome of checking a signed blob URL; `reason` says what is wrong with a refused one. */
export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'bad_signature' | 'expired' };

export interface BlobUrlSignerOptions {
  /** Base URL clients reach the service at (`PUBLIC_BASE_URL`); a trailing `/` is ignored. */
  publicBaseUrl: string;
  /** HMAC-SHA256 key, at least 32 bytes; the same on every replica, or URLs break between them. */
  secret: string | Buffer;
}

// Binds signatures to this use of the secret, should it ever sign anything else.
const PURPOSE = 'svc-blob-get-v1';
const UNIX_SECONDS = /^\d{1,12}$/;

/**
 * The service's own signed blob URLs: `<base>/blobs/<key>?expires=<unix s>&signature=<b64url>`.
 * These are what callers receive, never a provider's URL or the store's own presigned one, so
 * blobs can move between drivers and access stays under the service's control. The URL is the
 * credential: whoever holds it may read the blob until it expires.
 */
export class BlobUrlSigner {
  private readonly base: string;
  private readonly secret: Buffer;

  constructor(options: BlobUrlSignerOptions) {
    this.secret = Buffer.isBuffer(options.secret) ? options.secret : Buffer.from(options.secret, 'utf8');
    if (this.secret.length < 32) throw new Error('the blob signing secret must be at least 32 characters (bytes) long');
    this.base = options.publicBaseUrl.replace(/\/+$/, '');
  }

  private signature(key: string, expires: string): string {
    return createHmac('sha256', this.secret).update(`${PURPOSE}\n${key}\n${expires}`).digest('base64url');
  }

  /** A URL for `key` valid until `expiresAt` (whole seconds, rounded down). */
  sign(key: string, expiresAt: Date): string {
    checkBlobKey(key);
    const ms = expiresAt.getTime();
    if (!Number.isFinite(ms) || ms < 0) throw new Error(`cannot sign a blob URL expiring at ${String(expiresAt)}`);
    const expires = String(Math.floor(ms / 1000));
    // Key characters are URL-safe by checkBlobKey, so the path needs no escaping.
    return `${this.base}/blobs/${key}?expires=${expires}&signature=${this.signature(key, expires)}`;
  }

  /**
   * Checks a blob URL's `expires` and `signature` parameters for `key` (the signature compared in
   * constant time, before the expiry, so a forged URL learns nothing about the clock).
   */
  verify(key: string, expires: string | undefined, signature: string | undefined, now: Date = new Date()): SignatureCheck {
    if (!expires || !signature) return { ok: false, reason: 'missing' };
    if (!UNIX_SECONDS.test(expires)) return { ok: false, reason: 'malformed' };
    const expected = Buffer.from(this.signature(key, expires));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'bad_signature' };
    if (Number(expires) * 1000 <= now.getTime()) return { ok: false, reason: 'expired' };
    return { ok: true };
  }
}
