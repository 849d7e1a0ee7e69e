import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Metrics } from '../../platform/metrics';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/** Gives every request an id (the caller's X-Request-Id when it is sane) and echoes it back. */
export function requestId() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.get('x-request-id');
    const id = given && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
    res.locals.requestId = id;
    res.set('X-Request-Id', id);
    next();
  };
}

/** Counts and times every request by its route pattern (bounded labels), once it has finished or the client left. */
export function requestMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const end = metrics.httpDuration.startTimer();
    res.on('close', () => {
      const labels = { method: req.method, route: String(res.locals.route ?? 'unmatched'), status: String(res.statusCode) };
      metrics.httpRequests.inc(labels);
      end(labels);
    });
    next();
  };
}

/** Health and metrics scrapes are not logged (they would drown the rest). */
const UNLOGGED: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One JSON log line per finished request, carrying the request id; 5xx at error level, 4xx at
 * warn, the rest at info. The line is pino-http's (`req` with method, url and id, `res` with the
 * status, `responseTime` in ms; "request completed", or "request errored" with `err` for a 5xx),
 * written here with one `close` listener: pino-http's two child loggers, three listeners and
 * their closures cost about 1.2 KB for every open request, which an open SSE stream is
 * (docs/performance.md, B6).
 */
export function requestLogging(log: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!UNLOGGED.has(req.url)) {
      const started = Date.now();
      res.once('close', () => logFinished(log, req, res, started));
    }
    next();
  };
}

function logFinished(log: Logger, req: Request, res: Response, started: number): void {
  const { statusCode } = res;
  const line = { req: { method: req.method, url: req.originalUrl, id: String(res.locals.requestId) }, res: { statusCode }, responseTime: Date.now() - started };
  if (statusCode >= 500) log.error({ ...line, err: new Error(`failed with status code ${statusCode}`) }, 'request errored');
  else if (statusCode >= 400) log.warn(line, 'request completed');
  else log.info(line, 'request completed');
}
