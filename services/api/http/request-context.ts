import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
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

/**
 * One JSON log line per finished request, carrying the request id; 5xx at error level, 4xx at
 * warn, the rest at info. Health and metrics scrapes are not logged (they would drown the rest).
 */
export function requestLogging(log: Logger) {
  return pinoHttp({
    logger: log,
    genReqId: (_req, res) => String((res as Response).locals.requestId),
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    autoLogging: { ignore: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url ?? '') },
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({ method: req.method, url: req.url, id: req.id }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}
