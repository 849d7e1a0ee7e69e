import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { CALL_OPTIONS, OP_NAMES, parseCallOption, ROUTE_NAMES, type CallOptionName, type CallOptionValues, type Operation } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { RateLimitResult } from '../../queue';
import type { TokenLookup } from '../auth/auth-context';
import { identifyCaller } from '../auth/authenticate';
import type { CallName, EventStream } from '../handlers/handler-types';
import type { CountedCall } from '../auth/call-limits';
import { declarationOf, DeferredInput, describeCall, type Invoke, type InvokeContext } from '../invoke/invoke';
import { setRateLimitHeaders } from './rate-limits';
import { emptyBodyError, requestInput, uploadOf } from './request-input';
import { writeEventStream, type StreamMetrics } from './sse-writer';

export interface OperationRouteOptions {
  invoke: Invoke;
  tokens: TokenLookup;
  log: Logger;
  bodyLimitBytes: number;
  heartbeatMs: number;
  streamMetrics?: StreamMetrics;
}

/** Every operation and route, literal paths after parametric ones (see the marks below). */
function declarations(): [CallName, Operation][] {
  return [...OP_NAMES, ...ROUTE_NAMES].map((name): [CallName, Operation] => [name, declarationOf(name)]);
}

/** Every declared path with the methods declared on it, parametric paths before literal ones (a literal one's mark wins). */
function markedPaths(all: readonly [CallName, Operation][]): [string, string[]][] {
  const methodsByPath = new Map<string, string[]>();
  for (const [, op] of all) methodsByPath.set(op.http.path, [...(methodsByPath.get(op.http.path) ?? []), op.http.method]);
  return [...methodsByPath].sort(([a], [b]) => Number(!a.includes('/:')) - Number(!b.includes('/:')));
}

/**
 * Whether a method and path (as the app sees it: at the root or under `/api`) reach a declared
 * operation or route's handler, as the router decides (the last path marked wins, so `/v1/runs/node`
 * is not `/v1/runs/:id`; case-insensitive, a trailing `/` allowed, HEAD served by GET).
 */
export function declaredCallMatcher(): (method: string, path: string) => boolean {
  const patterns = markedPaths(declarations()).map(([path, methods]) => {
    const segments = path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    return { pattern: new RegExp(`^(?:/api)?${segments.join('/')}/?$`, 'i'), methods };
  });
  return (method, path) => {
    const marked = patterns.findLast(({ pattern }) => pattern.test(path));
    return marked !== undefined && marked.methods.includes(method === 'HEAD' ? 'GET' : method);
  };
}

const hasBody = (req: Request): boolean => {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
};

/** Runs an Express body parser as a function. */
function parseWith(parser: express.RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}

/**
 * The HTTP surface of both registries: one loop. Each declaration gets its route, which reads
 * the request (who calls, the path, query or body), hands it to `invoke` (scope, limits,
 * validation, the handler) and writes the answer as JSON or as an event stream. Other methods on
 * a declared path are 405 with `Allow` (answered by `methodNotAllowed`, mounted last).
 */
export function operationRoutes(options: OperationRouteOptions): Router {
  const router = Router();
  // Any Content-Type is parsed as JSON: callers using `curl -d` forget the header, and the
  // contract has no other body format.
  const json = express.json({ limit: options.bodyLimitBytes, type: () => true, strict: true });
  const all = declarations();

  // Every path is marked with the methods declared on it before any route runs. Parametric
  // paths first, so that a literal one (`/v1/runs/node`) overrides `/v1/runs/:id`'s mark, and
  // a route serves only requests its own path was marked for.
  for (const [path, methods] of markedPaths(all)) {
    router.all(path, (_req: Request, res: Response, next: NextFunction) => {
      res.locals.route = path;
      res.locals.allowedMethods = methods;
      next();
    });
  }

  for (const [name, op] of all) {
    const method = op.http.method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete';
    const what = describeCall(name);
    const readInput = async (req: Request, res: Response, ctx: InvokeContext): Promise<unknown> => {
      // Read with the input, so a bad option is a 400 after the caller's token and scope are checked.
      if (op.http.options) ctx.options = callOptions(op.http.options, req);
      if (op.http.body === 'bytes') {
        // Unread: the handler streams it, under its own limit (uploads, recipe assets).
        ctx.upload = uploadOf(req);
        return requestInput(op, req, { fromBody: false });
      }
      if (op.http.method === 'POST' || op.http.method === 'PATCH') {
        // An empty body is a caller mistake worth naming (express.json would turn it into `{}`).
        if (!hasBody(req)) {
          if (op.http.body === 'empty') return requestInput(op, req, { fromBody: false });
          throw emptyBodyError();
        }
        await parseWith(json, req, res);
      }
      return requestInput(op, req);
    };

    router[method](op.http.path, async (req: Request, res: Response, next: NextFunction) => {
      if (res.locals.route !== op.http.path) return next('route');
      res.locals.op = name;
      const auth = await identifyCaller(req, res, { what, optional: op.auth === 'optional', tokens: options.tokens });
      res.locals.auth = auth;
      const controller = new AbortController();
      res.locals.abortOnClose = controller;
      res.on('close', abortCall);
      const requestId = String(res.locals.requestId);
      const lastEventId = req.get('last-event-id');
      // The context lives as long as the call, a stream's whole life: its logger is made when first
      // used (a stream rarely logs), and its function is a method because tsx names an arrow
      // bound to a property, and a named closure carries a property dictionary of about 256 bytes.
      let log: Logger | undefined;
      const ctx: InvokeContext = {
        auth,
        requestId,
        get log() {
          return (log ??= options.log.child({ requestId }));
        },
        signal: controller.signal,
        tokenCounted: res.locals.tokenCounted as CountedCall | undefined,
        clientAddress: req.ip ?? req.socket.remoteAddress ?? 'unknown',
        ...(lastEventId === undefined ? {} : { lastEventId }),
        onTokenLimit(state: RateLimitResult) {
          const shown = res.locals.ipLimit as RateLimitResult | undefined;
          if (!shown || !state.allowed || state.remaining <= shown.remaining) setRateLimitHeaders(res, state);
        },
      };
      const result = await options.invoke(name, new DeferredInput(() => readInput(req, res, ctx)), ctx);
      if (op.response === 'sse') return writeEventStream(res, result as EventStream, { heartbeatMs: options.heartbeatMs, metrics: options.streamMetrics });
      if (op.http.noStore) res.set('Cache-Control', 'no-store');
      const status = op.http.status ?? 200;
      if (status === 204) res.status(204).end();
      else res.status(status).json(result);
    });
  }
  return router;
}

/** The call options `names` from their request headers; a malformed one is a 400 naming the header. */
function callOptions(names: readonly CallOptionName[], req: Request): CallOptionValues {
  const values: Record<string, unknown> = {};
  for (const name of names) {
    const raw = req.get(CALL_OPTIONS[name].header);
    if (raw === undefined) continue;
    const parsed = parseCallOption(name, raw);
    if (!parsed.ok) throw new AppError({ code: 'validation_failed', message: parsed.message, details: { issues: [{ path: CALL_OPTIONS[name].header, message: parsed.message }] } });
    values[name] = parsed.value;
  }
  return values as CallOptionValues;
}

/**
 * Why a call's signal aborts: its response closed. One instance for every call: `abort()` with no
 * reason builds a DOMException with its stack for each, and every response's close aborts its call.
 */
const RESPONSE_CLOSED = new DOMException('the response closed (finished, or its client went away)', 'AbortError');

/** Aborts a call's signal when its client goes away: one listener function for every call, reading the call's controller from `res.locals` (a closure per call would be held as long as an open stream). */
function abortCall(this: Response): void {
  (this.locals.abortOnClose as AbortController).abort(RESPONSE_CLOSED);
}

/**
 * The last handler of the API router: a request on a declared path that no route served is 405
 * with `Allow`.
 */
export function methodNotAllowed() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const methods = res.locals.allowedMethods as string[] | undefined;
    if (!methods) return next();
    res.set('Allow', methods.join(', '));
    throw new AppError({ code: 'method_not_allowed', message: `${req.method} is not allowed on ${String(res.locals.route)}; use ${methods.join(' or ')}` });
  };
}
