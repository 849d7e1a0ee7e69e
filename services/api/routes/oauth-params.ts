import express, { type NextFunction, type Request, type Response } from 'express';

/**
 * Request parameters and error responses of the OAuth endpoints (`POST /oauth/device/code`,
 * `POST /oauth/token`). They speak OAuth, not the service's JSON conventions, so that RFC
 * clients work unchanged: bodies are `application/x-www-form-urlencoded` (JSON objects of
 * strings are accepted too), and errors are RFC 6749 §5.2 bodies.
 */

/** Error codes of RFC 6749 §5.2 and RFC 8628 §3.5 that these endpoints answer. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_grant'
  | 'invalid_scope'
  | 'unsupported_grant_type'
  | 'authorization_pending'
  | 'slow_down'
  | 'access_denied'
  | 'expired_token'
  | 'temporarily_unavailable';

/** An OAuth error: answered as `{ error, error_description, ...extra }` with `status`. */
export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(options: { error: OAuthErrorCode; description: string; status?: number; extra?: Record<string, unknown>; headers?: Record<string, string> }) {
    super(options.description);
    this.name = 'OAuthError';
    this.error = options.error;
    this.status = options.status ?? 400;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }
}

export function invalidRequest(description: string): OAuthError {
  return new OAuthError({ error: 'invalid_request', description });
}

/** RFC 6749 §5.1: token responses (and their errors) must not be cached. */
export function noStore(res: Response): void {
  res.set('Cache-Control', 'no-store');
  res.set('Pragma', 'no-cache');
}

const MAX_BODY = '16kb';

/** Reads any body as text; {@link oauthParams} decides between form and JSON. */
export const oauthBody = express.text({ type: () => true, limit: MAX_BODY });

function fromForm(raw: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    // RFC 6749 §3.2: parameters must not be included more than once.
    if (key in params) throw invalidRequest(`the parameter "${key}" is given more than once; send each parameter once`);
    params[key] = value;
  }
  return params;
}

function fromJson(raw: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw invalidRequest(`the request body is not valid JSON (${(err as Error).message}); send application/x-www-form-urlencoded parameters or a JSON object of strings`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalidRequest('the request body must be a JSON object of string parameters, or application/x-www-form-urlencoded');
  }
  const params: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof value !== 'string') throw invalidRequest(`the parameter "${key}" must be a string, got ${value === null ? 'null' : typeof value}`);
    params[key] = value;
  }
  return params;
}

/**
 * The request's parameters: a JSON object when the Content-Type says JSON or the body starts
 * with `{` (`curl -d '{…}'` sends the form type), form parameters otherwise. Parameters this
 * endpoint does not know are ignored, as RFC 6749 §3.2 requires.
 */
export function oauthParams(req: Request): Record<string, string> {
  const raw = typeof req.body === 'string' ? req.body : '';
  if (raw.trim() === '') return {};
  const type = req.get('content-type') ?? '';
  return /\bjson\b/i.test(type) || raw.trimStart().startsWith('{') ? fromJson(raw) : fromForm(raw);
}

/** One parameter that must be present and non-empty. */
export function required(params: Record<string, string>, name: string, hint: string): string {
  const value = params[name];
  if (value === undefined || value.trim() === '') throw invalidRequest(`the parameter "${name}" is required: ${hint}`);
  return value;
}

interface BodyParserError {
  type?: string;
  limit?: number;
  message?: string;
}

/**
 * The error handler of the OAuth endpoints: OAuth errors and body-reading failures become RFC 6749
 * §5.2 bodies; anything else goes on to the service's error handler.
 */
export function oauthErrors() {
  return (err: unknown, _req: Request, res: Response, next: NextFunction): void => {
    let oauth: OAuthError | null = err instanceof OAuthError ? err : null;
    const parserError = err as BodyParserError;
    if (!oauth && parserError?.type === 'entity.too.large') {
      oauth = new OAuthError({ error: 'invalid_request', status: 413, description: `the request body is larger than ${parserError.limit ?? MAX_BODY} bytes` });
    } else if (!oauth && typeof parserError?.type === 'string' && parserError.type.endsWith('.unsupported')) {
      oauth = new OAuthError({ error: 'invalid_request', status: 415, description: `${parserError.message ?? 'unsupported body encoding'}; send UTF-8` });
    }
    if (!oauth || res.headersSent) return next(err);
    noStore(res);
    res.set(oauth.headers);
    res.status(oauth.status).json({ ...oauth.extra, error: oauth.error, error_description: oauth.message });
  };
}
