import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type Request, type Response } from 'express';
import { AppError } from '../../platform/app-error';

/** The studio's client-side pages: each answers index.html, and the studio's router draws the page. */
export const STUDIO_PAGES = ['/', '/sign-in', '/workflows/:id', '/runs', '/runs/:id', '/batches', '/batches/:id', '/schedules', '/schedules/:id', '/settings/tokens'] as const;

/**
 * Only the studio's own scripts run; styles inline (the canvas positions nodes with style
 * attributes); run outputs may be images, audio and video from the blob store's signed URLs,
 * which an S3 deployment serves from another host. No framing (clickjacking of approvals).
 */
function pagePolicy(formTargets: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    'img-src * data: blob:',
    'media-src * data: blob:',
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    `form-action ${["'self'", ...formTargets].join(' ')}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

export interface StudioPageOptions {
  /**
   * Origins a form of the page may end up at beside the service's own: the MCP consent page's
   * Allow posts here and is redirected to the client's redirect URI, and browsers apply
   * `form-action` to the redirects after a form post too.
   */
  formTargets?: readonly string[];
  /** `no-store` for pages about one request (the MCP consent page); default `no-cache`. */
  cacheControl?: 'no-cache' | 'no-store';
}

/**
 * Sends the studio's index.html with the headers of its pages (the studio's router draws the page
 * the path names). A missing build is a 503 that says how to build it.
 */
export function sendStudioPage(res: Response, dir: string, options: StudioPageOptions = {}): void {
  const indexFile = path.join(path.resolve(dir), 'index.html');
  if (!fs.existsSync(indexFile)) {
    throw new AppError({ code: 'unavailable', message: `the studio is not built (no ${indexFile}): run "make run", or "npm run build -w services/studio"` });
  }
  res.set({
    'Cache-Control': options.cacheControl ?? 'no-cache',
    'Content-Security-Policy': pagePolicy(options.formTargets),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
  });
  res.sendFile(indexFile);
}

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
    sendStudioPage(res, dir);
  };
  for (const pagePath of [...STUDIO_PAGES, ...(deps.extraPages ?? [])]) router.get(pagePath, page);
  return router;
}
