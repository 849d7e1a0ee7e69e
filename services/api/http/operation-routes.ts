import express, { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { OPERATIONS, OP_NAMES, validateInput, type OpName, type Operation } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { TokenLookup } from '../auth/auth-context';
import { authenticateFor } from '../auth/authenticate';
import type { EventStream, Handlers, OpContext } from '../handlers/handler-types';
import { emptyBodyError, requestInput } from './request-input';
import { writeEventStream, type StreamGauge } from './sse-writer';
import { inStreamSlot, type StreamSlots } from './stream-slots';

export interface ContractRouteOptions {
  handlers: Handlers;
  tokens: TokenLookup;
  log: Logger;
  bodyLimitBytes: number;
  heartbeatMs: number;
  openStreams?: StreamGauge;
  /** The organization's open-stream limit; absent: unlimited. */
  streamSlots?: StreamSlots;
}

/**
 * Operations that hold their response open while a run goes on (its event stream, or
 * `runs.node` waiting for its one node): each holds one of its organization's stream slots.
 */
const HOLDS_A_STREAM: ReadonlySet<OpName> = new Set<OpName>(['runs.create', 'runs.node']);

/** An empty POST body is a caller mistake worth naming (express.json would turn it into `{}`). */
function requireBody(req: Request, _res: Response, next: () => void): void {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody) throw emptyBodyError();
  next();
}

function contextOf(res: Response, log: Logger): OpContext {
  const controller = new AbortController();
  res.on('close', () => controller.abort());
  const requestId = String(res.locals.requestId);
  return { auth: res.locals.auth ?? null, requestId, log: log.child({ requestId }), signal: controller.signal };
}

/**
 * The HTTP surface of the contract: one loop over the registry. Each operation gets its route,
 * authentication, body parsing, validation against its input schema, and a handler call whose
 * result is written as JSON or as an event stream. Other methods on an operation's path are 405.
 */
export function contractRoutes(options: ContractRouteOptions): Router {
  const router = Router();
  // Any Content-Type is parsed as JSON: callers using `curl -d` forget the header, and the
  // contract has no other body format.
  const json = express.json({ limit: options.bodyLimitBytes, type: () => true, strict: true });
  const methodsByPath = new Map<string, string[]>();

  for (const name of OP_NAMES) {
    const op: Operation = OPERATIONS[name];
    const method = op.http.method === 'GET' ? 'get' : 'post';
    methodsByPath.set(op.http.path, [...(methodsByPath.get(op.http.path) ?? []), op.http.method]);
    const parsers = op.http.method === 'POST' ? [requireBody, json] : [];

    router[method](
      op.http.path,
      (_req, res, next) => {
        res.locals.route = op.http.path;
        res.locals.op = name;
        next();
      },
      // Authentication (and the CSRF guard of cookie sessions) before the body is read: a refused
      // caller learns nothing about its body, and a forged form post is 403 whatever it holds.
      authenticateFor(op, options.tokens),
      ...parsers,
      async (req: Request, res: Response) => {
        const checked = validateInput(name, requestInput(op, req));
        if (!checked.ok) {
          throw new AppError({ code: 'validation_failed', message: checked.message, details: { issues: checked.issues } });
        }
        const ctx = contextOf(res, options.log);
        const handler = options.handlers[name as OpName] as (input: unknown, ctx: OpContext) => Promise<unknown>;
        const respond = async (): Promise<void> => {
          const result = await handler(checked.value, ctx);
          if (op.response === 'sse') {
            await writeEventStream(res, result as EventStream, { heartbeatMs: options.heartbeatMs, openStreams: options.openStreams });
          } else {
            res.status(200).json(result);
          }
        };
        // The slot is taken before the handler starts a run: a refused request creates none.
        await (HOLDS_A_STREAM.has(name) ? inStreamSlot(options.streamSlots, res, respond) : respond());
      },
    );
  }

  // Other methods on an operation's path are answered 405 by `methodNotAllowed`, mounted after
  // the routers beside the contract: those may serve another method on the same path
  // (`GET /v1/runs`, run history). Here the path is only marked as the contract's.
  for (const [path, methods] of methodsByPath) {
    router.all(path, (_req, res, next) => {
      res.locals.route = path;
      res.locals.allowedMethods = methods;
      next();
    });
  }
  return router;
}

/**
 * The last handler of the API router: a request on a contract path that no route served is 405
 * with `Allow` (the contract's methods, plus those routers beside it added to `allowedMethods`).
 */
export function methodNotAllowed() {
  return (req: Request, res: Response, next: () => void): void => {
    const methods = res.locals.allowedMethods as string[] | undefined;
    if (!methods) return next();
    res.set('Allow', methods.join(', '));
    throw new AppError({ code: 'method_not_allowed', message: `${req.method} is not allowed on ${String(res.locals.route)}; use ${methods.join(' or ')}` });
  };
}
