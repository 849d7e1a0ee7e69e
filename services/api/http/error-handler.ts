import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ErrorBody } from '../../contract';
import { toAppError } from '../../platform/app-error';
import { fromRequestParsing } from './request-parse-errors';

/** The one translator from errors to HTTP: `{ error, code, ...details }` with the code's status. */
export function errorHandler(log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const appError = fromRequestParsing(err, req) ?? toAppError(err);
    const requestId = String(res.locals.requestId ?? '');
    if (appError.status >= 500) {
      log.error({ err: appError.cause ?? err, requestId, method: req.method, path: req.path }, 'request failed');
    }
    if (res.headersSent) {
      // A stream already started: its failures travel as events; all that is left is to close.
      res.end();
      return;
    }
    const body: ErrorBody = { ...(appError.details ?? {}), error: appError.message, code: appError.code };
    if (appError.status >= 500 && requestId) body.requestId = requestId;
    res.status(appError.status).json(body);
  };
}
