import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ErrorBody } from '../../contract';
import { outageError, toAppError, type AppError } from '../../platform/app-error';
import { isRedisUnavailable } from '../../queue';
import { isDatabaseUnavailable } from '../../store/store-outage';
import { fromRequestParsing } from './request-parse-errors';

/**
 * A request that failed because Postgres or Redis cannot be used right now: `503 unavailable`
 * with `Retry-After` (from its details, below), not `500` (nothing is wrong with the request, and retrying it later is
 * right). The message names neither host nor port.
 */
function fromOutage(err: unknown): AppError | null {
  const what = isDatabaseUnavailable(err) ? 'the database' : isRedisUnavailable(err) ? 'the queue and event store (Redis)' : null;
  if (!what) return null;
  return outageError(`${what} is unavailable for a moment`, { cause: err });
}

/** The one translator from errors to HTTP: `{ error, code, ...details }` with the code's status. */
export function errorHandler(log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const appError = fromRequestParsing(err, req) ?? fromOutage(err) ?? toAppError(err);
    const requestId = String(res.locals.requestId ?? '');
    if (appError.status >= 500) {
      log.error({ err: appError.cause ?? err, requestId, method: req.method, path: req.path }, 'request failed');
    }
    if (res.headersSent) {
      // A stream already started: its failures travel as events; all that is left is to close.
      res.end();
      return;
    }
    // A refusal that says when to come back (rate limits) says it in the header too.
    const retryAfter = appError.details?.retryAfterSeconds;
    if (typeof retryAfter === 'number' && !res.get('Retry-After')) res.set('Retry-After', String(retryAfter));
    const body: ErrorBody = { ...(appError.details ?? {}), error: appError.message, code: appError.code };
    if (appError.status >= 500 && requestId) body.requestId = requestId;
    res.status(appError.status).json(body);
  };
}
