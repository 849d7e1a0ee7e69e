/**
 * Whether an error says that Redis cannot be used right now (restarting, loading its data,
 * busy, a replica without its primary, unreachable) rather than that the command was wrong: the
 * HTTP translator answers those `503` with `Retry-After`. A Redis error reply starts with its
 * error code, one upper-case word (the protocol's own code field, not prose); ioredis errors of
 * its own are told by their name. The `cause` chain is followed.
 */

/** Redis reply codes of a server that cannot serve now. */
const REPLY_CODES = new Set(['LOADING', 'BUSY', 'MASTERDOWN', 'TRYAGAIN', 'CLUSTERDOWN']);

/** ioredis: a command given up after its retries (with `maxRetriesPerRequest` set). */
const IOREDIS_NAMES = new Set(['MaxRetriesPerRequestError']);

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function isOutage(err: { name?: unknown; code?: unknown; message?: unknown }): boolean {
  if (typeof err.name === 'string' && IOREDIS_NAMES.has(err.name)) return true;
  if (typeof err.code === 'string' && SOCKET_CODES.has(err.code)) return true;
  if (err.name !== 'ReplyError' || typeof err.message !== 'string') return false;
  return REPLY_CODES.has(err.message.split(' ', 1)[0] ?? '');
}

export function isRedisUnavailable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    if (isOutage(current as { name?: unknown; code?: unknown; message?: unknown })) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
