import { Router, type Request, type Response } from 'express';
import { BlobNotFoundError, InvalidBlobKeyError, type BlobStore, type BlobUrlSigner } from '../../blobs';
import { AppError } from '../../platform/app-error';

const REASONS = {
  missing: 'this blob URL lacks its "expires" and "signature" parameters; use the URL exactly as the service gave it',
  bad_signature: 'this blob URL\'s signature does not match; use the URL exactly as the service gave it',
  expired: 'this blob URL has expired; fetch the run again (GET /v1/runs/:id) for fresh URLs',
} as const;

/**
 * `GET /blobs/<key>?expires=&signature=`: streams a blob to whoever holds a valid signed URL
 * (the URL is the credential, so `<img src>` and plain downloads work without a token).
 */
export function createBlobRouter(deps: { store: BlobStore; signer: BlobUrlSigner }): Router {
  const router = Router();
  router.get('/blobs/*key', async (req: Request, res: Response) => {
    res.locals.route = '/blobs/*';
    const key = (req.params as unknown as { key: string[] }).key.join('/');
    const { expires, signature } = req.query as Record<string, string | undefined>;
    const check = deps.signer.verify(key, typeof expires === 'string' ? expires : undefined, typeof signature === 'string' ? signature : undefined);
    if (!check.ok) throw new AppError({ code: 'forbidden', message: REASONS[check.reason] });
    try {
      const blob = await deps.store.get(key);
      res.set({
        'Content-Type': blob.contentType,
        'Content-Length': String(blob.size),
        'Cache-Control': 'private, max-age=3600',
        'X-Content-Type-Options': 'nosniff',
      });
      if (req.method === 'HEAD') {
        blob.body.destroy();
        res.end();
        return;
      }
      blob.body.on('error', (err) => res.destroy(err));
      blob.body.pipe(res);
    } catch (err) {
      if (err instanceof BlobNotFoundError || err instanceof InvalidBlobKeyError) {
        throw new AppError({ code: 'not_found', message: 'this blob no longer exists (run artifacts are kept for 30 days)' });
      }
      throw err;
    }
  });
  return router;
}
