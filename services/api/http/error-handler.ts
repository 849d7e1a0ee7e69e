import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ErrorBody } from '../../contract';
import { AppError, toAppError } from '../../platform/app-error';

interface BodyParserError {
  type?: string;
  status?: number;
  length?: number;
  limit?: number;
  message?: string;
}

/** Errors raised by express.json() before any handler runs, turned into caller-facing ones. */
function fromBodyParser(err: unknown): AppError | null {
  const e = err as BodyParserError;
  switch (e?.type) {
    case 'entity.parse.failed':
      return new AppError({ code: 'invalid_json', message: `the request body is not valid JSON: ${e.message ?? 'parse error'}`, cause: err });
    case 'entity.too.large':
      return new AppError({
        code: 'payload_too_large',
        message: `the request body is ${e.length ?? 'too many'} bytes; the limit is ${e.limit} bytes`,
        cause: err,
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError({ code: 'unsupported_media_type', message: `${e.message ?? 'unsupported encoding'}; send UTF-8 JSON`, cause: err });
    case 'request.aborted':
      return new AppError({ code: 'bad_request', message: 'the request was aborted by the client', cause: err });
    default:
      return null;
  }
}

/** The one translator from errors to HTTP: `{ error, code, ...details }` with the code's status. */
export function errorHandler(log: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const appError = fromBodyParser(err) ?? toAppError(err);
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
