import { pipeline } from 'node:stream/promises';
import { Router, type Request, type Response } from 'express';
import { BlobNotFoundError, type BlobInfo, type BlobObject, type BlobStore, type BlobUrlSigner, type ByteRange, type SignatureCheck } from '../../blobs';
import { assetWorkflowOf } from '../../nodes/workflow-assets';
import { AppError } from '../../platform/app-error';
import { parseRange } from './byte-range';

type Refusal = Extract<SignatureCheck, { ok: false }>['reason'];

const REFUSALS: Record<Refusal, string> = {
  missing: 'this blob URL lacks its "expires" and "signature" parameters; use the URL exactly as the service gave it',
  malformed: 'this blob URL\'s "expires" parameter is not a time in unix seconds; use the URL exactly as the service gave it',
  bad_signature: 'this blob URL\'s signature does not match its path and expiry; use the URL exactly as the service gave it',
  expired: 'this blob URL has expired; fetch the run again (GET /v1/runs/:id) for fresh URLs',
};

// Blob bytes come from models and users: served from the API's origin, an HTML or SVG blob must
// not run script there, nor a browser guess a more dangerous type than the one given.
const SAFETY_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; sandbox",
};
const MAX_CACHE_SECONDS = 86_400;

export interface BlobRouteDeps {
  store: BlobStore;
  signer: BlobUrlSigner;
  /** Whether a workflow is live: its recipe assets are served only while it is (their URLs expire far in the future). */
  workflowLive(workflowId: string): Promise<boolean>;
  /** The clock expiry is checked against (tests pass a fixed one). */
  now?: () => Date;
}

/** The first value of a query parameter given as text, if any. */
function single(value: unknown): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : undefined;
}

function setHeaders(res: Response, blob: BlobInfo, expires: number, now: Date, range?: ByteRange): void {
  // A cached copy must not outlive the URL that fetched it.
  const maxAge = Math.max(0, Math.min(MAX_CACHE_SECONDS, expires - Math.floor(now.getTime() / 1000)));
  res.set({
    ...SAFETY_HEADERS,
    'Content-Type': blob.contentType,
    'Content-Length': String(range ? range.end - range.start + 1 : blob.size),
    'Accept-Ranges': 'bytes',
    'Cache-Control': `private, max-age=${maxAge}`,
    ...(range ? { 'Content-Range': `bytes ${range.start}-${range.end}/${blob.size}` } : {}),
  });
}

/** 416, with the blob's length in `Content-Range` as RFC 9110 asks. */
function unsatisfiable(res: Response, size: number): AppError {
  res.set('Content-Range', `bytes */${size}`);
  return new AppError({ code: 'range_not_satisfiable', message: `the Range header asks for no byte of this blob, which is ${size} bytes long` });
}

/**
 * `GET|HEAD /blobs/<key>?expires=&signature=`: streams a blob to whoever holds a valid signed
 * URL (the URL is the credential, so `<img src>` and plain downloads work without a token).
 * Refusals are 403 with a message naming the problem; a blob that is gone is 404. A single
 * byte range (`Range: bytes=...`, resumed or seeking downloads) is answered 206; more than one,
 * or any with `If-Range` (blobs have no validator to compare), with the whole blob.
 */
export function createBlobRouter(deps: BlobRouteDeps): Router {
  const router = Router();
  router.get('/blobs/*key', async (req: Request<{ key: string[] | string }>, res: Response) => {
    res.locals.route = '/blobs/*key';
    const key = ([] as string[]).concat(req.params.key).join('/');
    const expires = single(req.query.expires);
    const now = deps.now?.() ?? new Date();
    const check = deps.signer.verify(key, expires, single(req.query.signature), now);
    if (!check.ok) throw new AppError({ code: 'forbidden', message: REFUSALS[check.reason] });

    const missing = () => new AppError({ code: 'not_found', message: 'the blob at this URL no longer exists' });
    const assetOf = assetWorkflowOf(key);
    if (assetOf !== null && !(await deps.workflowLive(assetOf))) {
      throw new AppError({ code: 'not_found', message: 'this recipe asset belonged to a workflow that was deleted' });
    }
    if (req.method === 'HEAD') {
      const info = await deps.store.stat(key);
      if (!info) throw missing();
      setHeaders(res, info, Number(expires), now);
      res.status(200).end();
      return;
    }
    let range: ByteRange | undefined;
    if (req.headers.range !== undefined && req.headers['if-range'] === undefined) {
      const info = await deps.store.stat(key);
      if (!info) throw missing();
      const wanted = parseRange(req.headers.range, info.size);
      if (wanted.kind === 'unsatisfiable') throw unsatisfiable(res, info.size);
      if (wanted.kind === 'partial') range = wanted.range;
    }
    let blob: BlobObject;
    try {
      blob = await deps.store.get(key, range);
    } catch (err) {
      if (err instanceof RangeError) throw unsatisfiable(res, (await deps.store.stat(key))?.size ?? 0);
      throw err instanceof BlobNotFoundError ? missing() : err;
    }
    if (range) range = { start: range.start, end: Math.min(range.end, blob.size - 1) };
    setHeaders(res, blob, Number(expires), now, range);
    if (range) res.status(206);
    try {
      await pipeline(blob.body, res);
    } catch (err) {
      // A client that hangs up mid-download is not a server failure.
      if ((err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') return;
      throw err;
    }
  });
  return router;
}
