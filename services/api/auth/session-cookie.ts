import { parseCookie, stringifySetCookie } from 'cookie';
import type { Express, Request } from 'express';

/** The web editor's session cookie; its value is a `svcb_…` token whose hash is in `access_tokens`. */
export const SESSION_COOKIE = 'svc_session';

/**
 * Where the service lives, as browser sessions need it: its own origin (the only one allowed to
 * make cookie-authenticated mutations) and whether the cookie gets `Secure` (served over https).
 */
export interface SitePolicy {
  /** `scheme://host[:port]` of PUBLIC_BASE_URL, e.g. `https://studio.example.com`. */
  origin: string;
  secure: boolean;
}

/** The site policy of a public base URL (`https://studio.example.com/api` → origin `https://studio.example.com`, secure). */
export function sitePolicyOf(publicBaseUrl: string): SitePolicy {
  const url = new URL(publicBaseUrl);
  return { origin: url.origin, secure: url.protocol === 'https:' };
}

const LOCALS_KEY = 'sitePolicy';

/**
 * Records the site policy on the app (`createApp` does this), so every router's authentication
 * middleware finds it without each of them being handed the base URL.
 */
export function installSitePolicy(app: Express, publicBaseUrl: string): void {
  app.locals[LOCALS_KEY] = sitePolicyOf(publicBaseUrl);
}

/** The app's site policy; null when the app has none (cookie mutations are then refused). */
export function sitePolicyFor(req: Request): SitePolicy | null {
  return (req.app?.locals?.[LOCALS_KEY] as SitePolicy | undefined) ?? null;
}

/** The session cookie's value, or null when the request carries none. */
export function readSessionCookie(req: Request): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  const value = parseCookie(header)[SESSION_COOKIE];
  return value ? value : null;
}

/**
 * The `Set-Cookie` value of a new session: `HttpOnly` (page scripts cannot read it),
 * `SameSite=Lax` (not sent on cross-site subrequests and form posts), `Path=/` (both the root and
 * the `/api` prefix), `Secure` when the service is served over https.
 */
export function sessionCookie(value: string, options: { secure: boolean; maxAgeSeconds: number }): string {
  return stringifySetCookie(SESSION_COOKIE, value, { httpOnly: true, sameSite: 'lax', path: '/', secure: options.secure, maxAge: options.maxAgeSeconds });
}

/** The `Set-Cookie` value that removes the session cookie. */
export function clearedSessionCookie(options: { secure: boolean }): string {
  return stringifySetCookie(SESSION_COOKIE, '', { httpOnly: true, sameSite: 'lax', path: '/', secure: options.secure, maxAge: 0, expires: new Date(0) });
}
