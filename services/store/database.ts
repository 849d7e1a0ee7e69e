import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { dbCalls, dbOperationOf, type DbCall } from '../platform/call-channels';
import { PrismaClient } from './prisma-generated';

/**
 * The two ways this service reaches Postgres, built side by side over one node-postgres pool:
 * Prisma for CRUD and transactions, and the pool itself for the typed SQL of the hot paths
 * (hot-sql.ts: the step and run transitions, run creation and reads), which skips Prisma's query
 * layer (it costs more CPU than those statements); README.md says which way serves what. The
 * owner closes both with `close()`.
 */
export interface Database {
  /** Prisma over the pool: CRUD, interactive transactions. */
  readonly prisma: PrismaClient;
  /** The pool under Prisma: hot-sql.ts runs its statements on it. */
  readonly pool: pg.Pool;
  /** Disconnects Prisma, then ends the pool (the adapter leaves a pool it was given open). */
  close(): Promise<void>;
}

/** Options of {@link createDatabase}. */
export interface DatabaseOptions {
  /** Most connections this process opens (node-postgres pool size); default 10. */
  poolSize?: number;
  /**
   * Longest wait for a connection, opening a new one or queued behind a busy pool (node-postgres'
   * `connectionTimeoutMillis`); default 5000. Without it a request waits for Postgres forever.
   */
  connectTimeoutMs?: number;
  /**
   * Longest wait for a statement's answer (node-postgres' client-side `query_timeout`); default
   * 30000. A connection whose statement timed out is dropped, not reused: a silent server (a
   * network blackhole, a half-open socket) is thus noticed, which TCP alone takes minutes to do.
   */
  queryTimeoutMs?: number;
  /** Told when an idle pooled connection fails (the pool replaces it); for logging. */
  onIdleError?: (err: Error) => void;
}

/**
 * A pooled connection that times its statements for metrics (`svc:db.query`). node-postgres
 * calls `query` with a callback (the pool's own `query`), Prisma's adapter with a promise; a
 * submittable (a cursor) is passed through untimed.
 */
class TimedClient extends pg.Client {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- passes node-postgres' overloads through unchanged
  override query(...args: any[]): any {
    const first = args[0] as { text?: string; submit?: unknown } | string | undefined;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const call = (): any => (super.query as (...a: any[]) => any)(...args);
    if (!dbCalls.hasSubscribers || (typeof first === 'object' && typeof first?.submit === 'function')) return call();
    const started = performance.now();
    const operation = dbOperationOf(typeof first === 'string' ? first : first?.text);
    const report = (ok: boolean) => dbCalls.publish({ operation, seconds: (performance.now() - started) / 1000, ok } satisfies DbCall);
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as (err: unknown, result: unknown) => void;
      args[last] = (err: unknown, result: unknown) => {
        report(!err);
        callback(err, result);
      };
      return call();
    }
    const result = call() as Promise<unknown>;
    result.then(
      () => report(true),
      () => report(false),
    );
    return result;
  }
}

/** Prisma and the hot paths' pool over `databaseUrl`; no engine binary is needed at run time. */
export function createDatabase(databaseUrl: string, options: DatabaseOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    query_timeout: options.queryTimeoutMs ?? 30_000,
    keepAlive: true,
    Client: TimedClient,
  });
  // An idle connection the server closes (restart, failover, pg_terminate_backend) is reported
  // here and dropped from the pool; the next query opens a new one. Without a listener the
  // 'error' event would crash the process.
  pool.on('error', (err) => options.onIdleError?.(err));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  let closed: Promise<void> | undefined;
  return {
    prisma,
    pool,
    close: () => (closed ??= prisma.$disconnect().then(() => pool.end())),
  };
}
