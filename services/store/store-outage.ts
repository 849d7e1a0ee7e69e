/**
 * Whether an error says that Postgres cannot be used right now (down, restarting, unreachable,
 * every connection busy) rather than that the statement was wrong: the HTTP translator answers
 * those `503` with `Retry-After`. Decided by codes, not by message text: Prisma's connection
 * codes, the driver adapter's error kinds, Postgres SQLSTATEs and socket error codes, anywhere
 * along the `cause` chain; only node-postgres' codeless connection errors are known by their text.
 */

/** Prisma: can't reach, timed out, server closed the connection, no pool connection in time, no transaction slot in time. */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);

/** `@prisma/adapter-pg` error kinds of a connection that failed. */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

/**
 * SQLSTATEs: admin/crash shutdown, starting up or in recovery, too many connections; and a
 * transaction Postgres rolled back for its own reasons of the moment (a deadlock it broke, a
 * serialization failure, a lock not granted in time): nothing of it was kept, and the same request
 * later is right. Class 08 is checked apart.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '40P01', '40001', '55P03']);

/** Socket failures of node-postgres itself (the hot path's plain statements bypass Prisma). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * node-postgres gives the errors of a connection lost while connecting or mid-query no code at all
 * (pg/lib/client.js, pg-pool): the exception to "codes only", matched whole and only on errors
 * without a code. Seen when Postgres dies behind anything that accepts the TCP connection first (a
 * pooler, a proxy, a load balancer): the connection opens, then ends before a byte of Postgres.
 */
const NODE_POSTGRES_CONNECTION_LOST = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  // The pool's query_timeout (DATABASE_QUERY_TIMEOUT_MS): Postgres did not answer in time.
  'Query read timeout',
]);

interface ErrorShape {
  message?: unknown;
  code?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; code?: unknown } } };
}

function isOutage(shape: ErrorShape): boolean {
  const code = typeof shape.code === 'string' ? shape.code : undefined;
  if (code === undefined && typeof shape.message === 'string' && NODE_POSTGRES_CONNECTION_LOST.has(shape.message)) return true;
  if (code && (PRISMA_CODES.has(code) || SQLSTATES.has(code) || SOCKET_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  const adapter = shape.meta?.driverAdapterError?.cause;
  if (!adapter) return false;
  if (typeof adapter.kind === 'string' && ADAPTER_KINDS.has(adapter.kind)) return true;
  return adapter.kind === 'postgres' && typeof adapter.code === 'string' && (SQLSTATES.has(adapter.code) || adapter.code.startsWith('08'));
}

export function isDatabaseUnavailable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    if (isOutage(current as ErrorShape)) return true;
    current = (current as ErrorShape).cause;
  }
  return false;
}
