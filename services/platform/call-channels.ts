import diagnostics from 'node:diagnostics_channel';

/**
 * Timings of the calls this process makes to what it depends on (Postgres, Redis, hosted
 * providers), published on Node's diagnostics channels. The clients publish without knowing
 * who listens (the store, the queue and the provider client stay free of metrics), and a
 * publish with no subscriber costs one boolean check. `metrics.ts` subscribes for the lifetime
 * of a service.
 */

/** A statement sent to Postgres: its first keyword (`select`, `insert`, ..., `other`). */
export interface DbCall {
  operation: string;
  seconds: number;
  ok: boolean;
}

/** A command sent to Redis, by its name (lower case). */
export interface RedisCall {
  command: string;
  seconds: number;
  ok: boolean;
}

/**
 * One HTTP try of a provider call (a retried call publishes each try). `outcome`: the status
 * class (`2xx`, `4xx`, `5xx`), `429`, or `timeout`, `network_error`, `aborted`.
 */
export interface ProviderCall {
  provider: string;
  outcome: string;
  seconds: number;
}

export const dbCalls = diagnostics.channel('svc:db.query');
export const redisCalls = diagnostics.channel('svc:redis.command');
export const providerCalls = diagnostics.channel('svc:provider.request');

const DB_OPERATIONS = new Set(['select', 'insert', 'update', 'delete', 'with', 'begin', 'commit', 'rollback', 'set', 'lock', 'savepoint', 'release']);

/** The label of a statement: its first keyword when it is a common one, else `other` (bounded). */
export function dbOperationOf(text: string | undefined): string {
  const word = /^\s*([a-z]+)/i.exec(text ?? '')?.[1]?.toLowerCase();
  return word && DB_OPERATIONS.has(word) ? word : 'other';
}
