/**
 * Cross-site request forgery guard of cookie-authenticated requests (SPEC: Authentication 5).
 * A browser attaches the session cookie to any request for the service's site, including one a
 * foreign page makes it send; the request headers a browser sets itself (which page scripts
 * cannot forge) tell where it came from:
 *
 * 1. `Sec-Fetch-Site`, when present, must be `same-origin` (not `same-site`, `cross-site`, `none`);
 * 2. `Origin`, when present, must be the service's own origin (`null`, sent by sandboxed and
 *    privacy-sensitive contexts, is not);
 * 3. without `Origin`, the origin of `Referer` must be the service's own;
 * 4. with neither `Origin` nor `Referer`, the request is refused: every current browser sends
 *    `Origin` on a non-GET request, so only a stripped or forged request lacks both.
 *
 * Safe methods (GET, HEAD, OPTIONS) change nothing and are not checked.
 */

/** Methods a cookie may authenticate from anywhere: they must not change anything. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The request headers the guard reads (lower-case names, as Node gives them). */
export interface OriginHeaders {
  'sec-fetch-site'?: string | string[];
  origin?: string | string[];
  referer?: string | string[];
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function originOf(text: string): string | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null;
  } catch {
    return null;
  }
}

function show(text: string): string {
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

/**
 * Why a cookie-authenticated request of `method` must be refused as cross-origin, or null when it
 * may go through. `ownOrigin` is the service's origin (from PUBLIC_BASE_URL); null refuses every
 * mutation (no origin is known to compare with).
 */
export function crossOriginProblem(method: string, headers: OriginHeaders, ownOrigin: string | null): string | null {
  if (SAFE_METHODS.has(method.toUpperCase())) return null;
  if (ownOrigin === null) return 'cookie-authenticated changes are refused: the service has no public base URL to compare the request origin with';
  const expected = `the web editor's own origin (${ownOrigin})`;
  const fetchSite = single(headers['sec-fetch-site']);
  if (fetchSite !== undefined && fetchSite.trim().toLowerCase() !== 'same-origin') {
    return `cross-site request refused: Sec-Fetch-Site is ${show(fetchSite)}, and a browser session may only make changes from ${expected} (Sec-Fetch-Site: same-origin); API clients send "Authorization: Bearer <token>" instead of the cookie`;
  }
  const origin = single(headers.origin);
  if (origin !== undefined) {
    if (originOf(origin) === ownOrigin) return null;
    return `cross-origin request refused: Origin is ${show(origin)}, and a browser session may only make changes from ${expected}; API clients send "Authorization: Bearer <token>" instead of the cookie`;
  }
  const referer = single(headers.referer);
  if (referer !== undefined) {
    if (originOf(referer) === ownOrigin) return null;
    return `cross-origin request refused: the request has no Origin header and its Referer (${show(referer)}) is not from ${expected}`;
  }
  return `request refused: a change made with a browser session must carry an Origin (or Referer) header from ${expected}; API clients send "Authorization: Bearer <token>" instead of the cookie`;
}
