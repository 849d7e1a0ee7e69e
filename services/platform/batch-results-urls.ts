import { createHmac, timingSafeEqual } from 'node:crypto';

// Binds signatures to this use of the secret (it also signs blob URLs and provider webhooks).
const PURPOSE = 'svc-batch-results-v1';
const UNIX_SECONDS = /^\d{1,12}$/;

export type ResultsFormat = 'jsonl' | 'csv';

/**
 * The download URLs of batches' results files (docs/batches.md, Results):
 * `<base>/v1/batches/<id>/results/download?format=…&expires=…&signature=…`. Like a blob URL, the
 * URL is the credential until it expires (a browser or `curl` fetches it without a token); the
 * signature (HMAC-SHA256 over the batch, the format and the expiry) is compared in constant time.
 */
export class BatchResultsUrls {
  private readonly base: string;
  private readonly secret: Buffer;
  readonly ttlSeconds: number;

  constructor(options: { baseUrl: string; secret: string; ttlSeconds: number }) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.secret = Buffer.from(options.secret, 'utf8');
    this.ttlSeconds = options.ttlSeconds;
    if (this.secret.length < 32) throw new Error('the batch results signing secret must be at least 32 characters (bytes) long');
  }

  private signature(batchId: string, format: ResultsFormat, expires: string): string {
    return createHmac('sha256', this.secret).update(`${PURPOSE}\n${batchId}\n${format}\n${expires}`).digest('base64url');
  }

  /** The file's URL, valid `ttlSeconds` from `now`, and when it expires. */
  urlFor(batchId: string, format: ResultsFormat, now: Date = new Date()): { url: string; expiresAt: Date } {
    const expiresAt = new Date((Math.floor(now.getTime() / 1000) + this.ttlSeconds) * 1000);
    const expires = String(expiresAt.getTime() / 1000);
    const url = `${this.base}/v1/batches/${encodeURIComponent(batchId)}/results/download?format=${format}&expires=${expires}&signature=${this.signature(batchId, format, expires)}`;
    return { url, expiresAt };
  }

  /** Why a download's parameters are refused, or null when `urlFor` made them and they have not expired. */
  refusal(batchId: string, format: string | undefined, expires: string | undefined, signature: string | undefined, now: Date = new Date()): string | null {
    if ((format !== 'jsonl' && format !== 'csv') || !expires || !signature || !UNIX_SECONDS.test(expires)) {
      return 'this results URL lacks its "format", "expires" or "signature" parameters; use the URL exactly as GET /v1/batches/:id/results gave it';
    }
    const expected = Buffer.from(this.signature(batchId, format, expires));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return 'this results URL\'s signature does not match its batch, format and expiry; use the URL exactly as GET /v1/batches/:id/results gave it';
    }
    if (Number(expires) * 1000 <= now.getTime()) return 'this results URL has expired; ask GET /v1/batches/:id/results for a new one';
    return null;
  }
}
