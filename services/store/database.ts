import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './prisma-generated';

/**
 * The two ways this service reaches Postgres, built side by side over one node-postgres pool:
 * Prisma for CRUD and transactions, and the pool itself for the typed SQL of the hot paths
 * (hot-sql.ts: the step and run transitions, run creation and reads), which skips Prisma's query
 * layer (it costs more CPU than those statements). The owner closes both with `close()`.
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

/** Prisma and the hot paths' pool over `databaseUrl`; no engine binary is needed at run time. */
export function createDatabase(databaseUrl: string, options: DatabaseOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    query_timeout: options.queryTimeoutMs ?? 30_000,
    keepAlive: true,
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
