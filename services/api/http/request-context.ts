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

/**
 * Counts and times every request by its route pattern (bounded labels), once it has finished or
 * the client left. The `close` listener is one function for every request, reading its response
 * from `this` and its start from `res.locals`: a closure (and a timer's) per request would be held
 * as long as the request is open, which an SSE stream is (docs/performance/streams.md).
 */
export function requestMetrics(metrics: Metrics) {
  function observe(this: Response): void {
    const labels = { method: this.req.method, route: String(this.locals.route ?? 'unmatched'), status: String(this.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, (performance.now() - (this.locals.metricsStart as number)) / 1000);
  }
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.locals.metricsStart = performance.now();
    res.on('close', observe);
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
 * (docs/performance/streams.md).
 */
export function requestLogging(log: Logger) {
  // One listener function for every request ('close' comes once): see requestMetrics.
  function logFinished(this: Response): void {
    logLine(log, this.req, this, this.locals.logStart as number);
  }
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!UNLOGGED.has(req.url)) {
      res.locals.logStart = Date.now();
      res.on('close', logFinished);
    }
    next();
  };
}

function logLine(log: Logger, req: Request, res: Response, started: number): void {
  const { statusCode } = res;
  const line = { req: { method: req.method, url: req.originalUrl, id: String(res.locals.requestId) }, res: { statusCode }, responseTime: Date.now() - started };
  if (statusCode >= 500) log.error({ ...line, err: new Error(`failed with status code ${statusCode}`) }, 'request errored');
  else if (statusCode >= 400) log.warn(line, 'request completed');
  else log.info(line, 'request completed');
}
