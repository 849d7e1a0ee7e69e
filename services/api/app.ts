import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { buildOpenApiDocument } from '../contract';
import { AppError } from '../platform/app-error';
import type { Metrics } from '../platform/metrics';
import type { TokenLookup } from './auth/auth-context';
import { installSitePolicy } from './auth/session-cookie';
import { knownBearerToken } from './auth/authenticate';
import type { MinuteLimit, TokenLimit } from './auth/call-limits';
import type { Invoke } from './invoke/invoke';
import { errorHandler } from './http/error-handler';
import { healthRoutes, type ReadinessProbe } from './http/health-routes';
import { metricsRoute } from './http/metrics-route';
import { declaredCallMatcher, methodNotAllowed, operationRoutes } from './http/operation-routes';
import { ipRateLimit } from './http/rate-limits';
import { requestId, requestLogging, requestMetrics } from './http/request-context';
import type { Router } from 'express';

export interface AppDeps {
  /** The one call path (scope, limits, validation, handlers) the routes adapt to HTTP. */
  invoke: Invoke;
  tokens: TokenLookup;
  log: Logger;
  metrics: Metrics;
  probes: readonly ReadinessProbe[];
  /** True once the process is stopping (`/readyz` answers 503). */
  isDraining?: () => boolean;
  bodyLimitBytes: number;
  trustProxy: boolean;
  /** Base URL clients use (the OpenAPI document's server). */
  publicBaseUrl: string;
  /** Routers beside the declared routes: blob downloads, browser sign-in, RFC 8628 device login. */
  extraRoutes: readonly Router[];
  /**
   * Routers served before the per-IP limit (at the root and under `/api`): providers' signed
   * webhooks, whose few addresses carry the calls of every customer of theirs, and whose refusal
   * (an HMAC) costs less than the limit's Redis call.
   */
  uncountedRoutes?: readonly Router[];
  /** Routers served at the root only, never under `/api`: the studio's pages and bundles. */
  siteRoutes?: readonly Router[];
  heartbeatMs: number;
  /** The per-IP request limit (shared through Redis); absent: none (`RATE_LIMIT_IP_PER_MINUTE=0`). */
  ipLimit?: MinuteLimit;
  /** The per-token limit `invoke` applies: counted with the per-IP one where the token is known at once. */
  tokenLimit?: TokenLimit;
}

/**
 * The Express application. Every route is served both at the root (`/v1/...`) and under the
 * `/api` prefix, as a deployment called directly serves it.
 */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.trustProxy);
  app.set('etag', false);
  // Its origin is the only one allowed to make cookie-authenticated changes (the web editor's).
  installSitePolicy(app, deps.publicBaseUrl);

  app.use(requestId());
  app.use(requestMetrics(deps.metrics));
  app.use(requestLogging(deps.log));
  for (const router of deps.uncountedRoutes ?? []) {
    app.use(router);
    app.use('/api', router);
  }
  // After logging and metrics, so refusals are logged and counted; before every other router.
  if (deps.ipLimit) app.use(ipRateLimit(deps.ipLimit, deps.tokenLimit && tokenCountedEarly(deps.tokenLimit, deps.tokens)));

  const api = express.Router();
  api.use(healthRoutes(deps.probes, { onFailure: (probe, err) => deps.log.warn({ err, probe }, 'readiness probe failed'), isDraining: deps.isDraining }));
  api.use(metricsRoute(deps.metrics.registry));
  const openapi = buildOpenApiDocument({ serverUrl: deps.publicBaseUrl, version: '1' });
  api.get('/v1/openapi.json', (_req, res) => {
    res.locals.route = '/v1/openapi.json';
    res.json(openapi);
  });
  api.use(
    operationRoutes({
      invoke: deps.invoke,
      tokens: deps.tokens,
      log: deps.log,
      bodyLimitBytes: deps.bodyLimitBytes,
      heartbeatMs: deps.heartbeatMs,
      streamMetrics: deps.metrics.streams,
    }),
  );
  for (const router of deps.extraRoutes) api.use(router);
  api.use(methodNotAllowed());

  app.use('/api', api);
  app.use(api);
  for (const router of deps.siteRoutes ?? []) app.use(router);

  app.use((req) => {
    // `/v1/workflows/dev/adder` is a path one segment too long, not a missing API: the address's
    // own `/` must be encoded to stay inside the one `:id` segment.
    const hint = /^(\/api)?\/v1\/workflows\//.test(req.path)
      ? 'a workflow address\'s "/" must be written %2F in the path, e.g. /v1/workflows/dev%2Fadder'
      : 'the API lives under /v1 (or /api/v1)';
    throw new AppError({ code: 'not_found', message: `no route for ${req.method} ${req.path}; ${hint}` });
  });
  app.use(errorHandler(deps.log));
  return app;
}

/**
 * Requests for a declared operation or route whose bearer token the token cache holds: `invoke`
 * will count them under that token, so the per-IP limit counts them too, in the same turn (docs/auth.md).
 */
function tokenCountedEarly(limit: TokenLimit, tokens: TokenLookup) {
  const declared = declaredCallMatcher();
  return {
    limit,
    tokenOf: (req: express.Request) => (declared(req.method, req.path) ? knownBearerToken(req.get('authorization'), tokens, new Date()) : undefined),
  };
}
