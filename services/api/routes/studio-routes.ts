import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type Request, type Response } from 'express';
import { AppError } from '../../platform/app-error';

/** The studio's client-side pages: each answers index.html, and the studio's router draws the page. */
export const STUDIO_PAGES = ['/', '/sign-in', '/workflows/:id', '/runs', '/runs/:id', '/settings/tokens'] as const;

/**
 * Only the studio's own scripts run; styles inline (the canvas positions nodes with style
 * attributes); run outputs may be images, audio and video from the blob store's signed URLs,
 * which an S3 deployment serves from another host. No framing (clickjacking of approvals).
 */
const PAGE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  'img-src * data: blob:',
  'media-src * data: blob:',
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface StudioRouteDeps {
  /** The built studio: index.html and studio-assets/. */
  dir: string;
  /** Extra client-side pages served by the studio (the device approval page, the MCP consent page). */
  extraPages?: readonly string[];
}

/**
 * Serves the built studio from the API's own origin, so its cookie session is same-origin. Hashed
 * bundles under /studio-assets/ are immutable; index.html is revalidated on every load, so a
 * deployment's new build is picked up at once. A missing build is a 503 that says how to build it.
 */
export function createStudioRouter(deps: StudioRouteDeps): Router {
  const router = Router();
  const dir = path.resolve(deps.dir);
  const indexFile = path.join(dir, 'index.html');

  router.use(
    '/studio-assets',
    (_req, res, next) => {
      res.locals.route = '/studio-assets/*';
      next();
    },
    express.static(path.join(dir, 'studio-assets'), { immutable: true, maxAge: '365d', index: false, etag: false }),
    (req: Request) => {
      // A bundle of an older build, asked for by a page loaded before a deployment: the page must reload.
      throw new AppError({ code: 'not_found', message: `no studio file ${req.originalUrl}; reload the page to get the current build` });
    },
  );

  const page = (req: Request, res: Response) => {
    res.locals.route = req.route?.path ?? req.path;
    if (!fs.existsSync(indexFile)) {
      throw new AppError({ code: 'unavailable', message: `the studio is not built (no ${indexFile}): run "make run", or "npm run build -w services/studio"` });
    }
    res.set({
      'Cache-Control': 'no-cache',
      'Content-Security-Policy': PAGE_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin',
      'X-Frame-Options': 'DENY',
    });
    res.sendFile(indexFile);
  };
  for (const pagePath of [...STUDIO_PAGES, ...(deps.extraPages ?? [])]) router.get(pagePath, page);
  return router;
}
