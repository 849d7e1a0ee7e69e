import pino, { type Logger } from 'pino';
import type { LogLevel } from './config';

export type { Logger };

/** JSON logs on stdout; fields that may carry secrets are redacted wherever they appear. */
export function createLogger(options: { level: LogLevel; name?: string }): Logger {
  return pino({
    name: options.name ?? 'svc',
    level: options.level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.token', '*.password', '*.secretKey'],
      censor: '[redacted]',
    },
  });
}
