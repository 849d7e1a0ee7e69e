import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { InvalidRequestError, OAuthError, UnsupportedGrantTypeError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FailureLimit } from '../handlers/device-ports';
import type { RateLimiter } from '../../queue';
import { fromRequestParsing } from '../http/request-parse-errors';
import { MCP_SCOPES } from './mcp-authorization-request';
import { allowOnly, routeLabel } from './route-marks';

/** Where the MCP authorization server lives, from `PUBLIC_BASE_URL` (docs/auth.md, "OAuth for MCP clients"). */
export interface McpOAuthUrls {
  /** `$PUBLIC_BASE_URL/oauth/mcp`: the issuer, under which its endpoints are. */
  issuer: string;
  /** `$PUBLIC_BASE_URL/mcp`: the protected resource, the hosted MCP server. */
  resource: string;
  authorize: string;
  token: string;
  register: string;
  revoke: string;
  /** RFC 9728's metadata URL of the resource (what the MCP server's 401 names). */
  resourceMetadata: string;
}

/** The issuer's own path under the app: its endpoints are `${ISSUER_PATH}/authorize`, …. */
export const ISSUER_PATH = '/oauth/mcp';

export function mcpOAuthUrls(publicBaseUrl: string): McpOAuthUrls {
  const base = publicBaseUrl.replace(/\/+$/, '');
  const issuer = `${base}${ISSUER_PATH}`;
  const resource = `${base}/mcp`;
  return {
    issuer,
    resource,
    authorize: `${issuer}/authorize`,
    token: `${issuer}/token`,
    register: `${issuer}/register`,
    revoke: `${issuer}/revoke`,
    resourceMetadata: `${new URL(base).origin}/.well-known/oauth-protected-resource${new URL(resource).pathname}`,
  };
}

export interface McpOAuthRouteDeps {
  provider: OAuthServerProvider;
  urls: McpOAuthUrls;
  /** Redis counts shared by the API replicas: registrations per client IP. */
  limiter: Pick<RateLimiter, 'hit'>;
  registrationsPerIp: FailureLimit;
}

const BODY_LIMIT = '16kb';

/**
 * Serves one of the SDK's handler routers (they route `/`) as the handler of an explicit route,
 * so the app's route list names the real path and unknown methods reach the app's 405.
 */
function asRoute(handler: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const original = req.url;
    const query = original.indexOf('?');
    req.url = query >= 0 ? `/${original.slice(query)}` : '/';
    void handler(req, res, (err?: unknown) => {
      req.url = original;
      next(err);
    });
  };
}

/**
 * RFC 6749 §5.2 bodies for what fails before the SDK's handlers answer: OAuth errors, and bodies
 * that cannot be read (too large, not JSON, a `Content-Encoding` they are not in, ...), which are
 * the client's mistakes, answered 4xx and not logged as failures. Anything else goes on to the
 * app's error handler, which answers 500 and logs it at error level, once.
 */
function oauthErrorBodies() {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    const parser = err as { type?: string; limit?: number; message?: string };
    let status = 400;
    let error: OAuthError;
    if (err instanceof OAuthError) {
      error = err;
      status = (err as OAuthError & { status?: number }).status ?? 400;
    } else if (parser?.type === 'entity.too.large') {
      status = 413;
      error = new InvalidRequestError(`the request body is larger than ${BODY_LIMIT}`);
    } else if (parser?.type === 'entity.parse.failed') {
      error = new InvalidRequestError(`the request body is not valid JSON (${parser.message ?? 'parse error'}); send a JSON object of client metadata`);
    } else if (typeof parser?.type === 'string' && parser.type.endsWith('.unsupported')) {
      status = 415;
      error = new InvalidRequestError(`${parser.message ?? 'unsupported body encoding'}; send UTF-8`);
    } else {
      const unreadable = fromRequestParsing(err, req);
      if (!unreadable || unreadable.status >= 500) return next(err);
      status = unreadable.status;
      error = new InvalidRequestError(unreadable.message);
    }
    res.set('Cache-Control', 'no-store');
    res.status(status).json(error.toResponseObject());
  };
}

/** A 429 carrying its status and `Retry-After` through {@link oauthErrorBodies}. */
class TooManyRegistrations extends OAuthError {
  static override errorCode = 'temporarily_unavailable';
  readonly status = 429;
}

const GRANT_PARAMS: Record<string, readonly string[]> = {
  authorization_code: ['client_id', 'code', 'code_verifier', 'redirect_uri'],
  refresh_token: ['client_id', 'refresh_token'],
};

/** Names what a token request lacks in words (the SDK's schema errors read as JSON dumps). */
function checkTokenRequest(req: Request, _res: Response, next: NextFunction): void {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const grantType = body.grant_type;
  if (typeof grantType !== 'string' || grantType === '') return next(new InvalidRequestError('the parameter "grant_type" is required: authorization_code or refresh_token'));
  const needed = GRANT_PARAMS[grantType];
  if (!needed) return next(new UnsupportedGrantTypeError(`grant_type "${grantType.slice(0, 100)}" is not supported here; send authorization_code or refresh_token (the device flow's grant is served at /oauth/token)`));
  for (const name of needed) {
    const value = body[name];
    if (Array.isArray(value)) return next(new InvalidRequestError(`the parameter "${name}" is given more than once; send each parameter once`));
    if (typeof value !== 'string' || value === '') return next(new InvalidRequestError(`the parameter "${name}" is required for grant_type=${grantType}`));
  }
  next();
}

/**
 * The MCP authorization server's machine endpoints, with the MCP SDK's handlers where they fit
 * (token, registration, revocation, metadata documents; their own rate limits are off: ours are
 * in Redis, shared by every replica), under the issuer path `/oauth/mcp` rather than the SDK
 * router's fixed root paths (see docs/auth.md for why). The authorization page is
 * `mcp-authorize-page-routes.ts`.
 */
export function createMcpOAuthRouter(deps: McpOAuthRouteDeps): Router {
  const router = Router();
  const { urls, provider } = deps;
  const issuerPath = new URL(urls.issuer).pathname;
  const resourcePath = new URL(urls.resource).pathname;

  const asMetadata: OAuthMetadata = {
    issuer: urls.issuer,
    authorization_endpoint: urls.authorize,
    token_endpoint: urls.token,
    registration_endpoint: urls.register,
    revocation_endpoint: urls.revoke,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...MCP_SCOPES],
  };
  const resourceMetadata: OAuthProtectedResourceMetadata = {
    resource: urls.resource,
    authorization_servers: [urls.issuer],
    scopes_supported: [...MCP_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'svc hosted MCP server',
  };
  // RFC 9728 §3.1 and RFC 8414 §3.1 put the path after the well-known segment; the bare forms are
  // where clients that ignore paths look.
  const documents: [string, object][] = [
    ...[...new Set(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', `/.well-known/oauth-protected-resource${resourcePath}`])].map(
      (path): [string, object] => [path, resourceMetadata],
    ),
    ...[...new Set(['/.well-known/oauth-authorization-server', `/.well-known/oauth-authorization-server${ISSUER_PATH}`, `/.well-known/oauth-authorization-server${issuerPath}`])].map(
      (path): [string, object] => [path, asMetadata],
    ),
  ];
  for (const [path, document] of documents) {
    const handler = asRoute(metadataHandler(document as OAuthMetadata));
    router.get(path, routeLabel(path), handler);
    router.options(path, routeLabel(path), handler);
    allowOnly(router, path, ['GET', 'OPTIONS']);
  }

  const registrations = { name: 'mcp-client-registration-ip', ...deps.registrationsPerIp };
  const limitRegistrations: RequestHandler = async (req, res, next) => {
    try {
      const hit = await deps.limiter.hit(registrations, `ip:${req.ip ?? 'unknown'}`);
      if (hit.allowed) return next();
      const seconds = Math.max(1, Math.ceil(hit.resetMs / 1000));
      res.set('Retry-After', String(seconds));
      next(new TooManyRegistrations(`too many client registrations from this address (${hit.limit} per ${Math.round(registrations.windowMs / 60000)} minutes); register once and keep the client_id, or try again in ${seconds} s`));
    } catch (err) {
      next(err);
    }
  };
  const endpoints: [string, RequestHandler[]][] = [
    [`${ISSUER_PATH}/register`, [limitRegistrations, express.json({ limit: BODY_LIMIT }), asRoute(clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: false }))]],
    [`${ISSUER_PATH}/token`, [express.urlencoded({ extended: false, limit: BODY_LIMIT }), checkTokenRequest, asRoute(tokenHandler({ provider, rateLimit: false }))]],
    [`${ISSUER_PATH}/revoke`, [express.urlencoded({ extended: false, limit: BODY_LIMIT }), asRoute(revocationHandler({ provider, rateLimit: false }))]],
  ];
  for (const [path, handlers] of endpoints) {
    // CORS preflights (browser-based MCP clients): the SDK's handlers answer them.
    router.options(path, routeLabel(path), handlers[handlers.length - 1]!);
    router.post(path, routeLabel(path), ...handlers);
    allowOnly(router, path, ['POST', 'OPTIONS']);
  }
  router.use([...documents.map(([path]) => path), ...endpoints.map(([path]) => path)], oauthErrorBodies());
  return router;
}
