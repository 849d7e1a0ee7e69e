import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient, type Prisma } from './prisma-generated';

export { PrismaClient };

/**
 * What a repository runs its queries on: the client, or the handle of an interactive transaction
 * (`prisma.$transaction(async (tx) => ...)`), so several repositories can commit together.
 */
export type Db = PrismaClient | Prisma.TransactionClient;

/** Options of {@link createPrismaClient}. */
export interface PrismaClientOptions {
  /** Most connections this process opens (node-postgres pool size); default 10. */
  poolSize?: number;
  /** Told when an idle pooled connection fails (the pool replaces it); for logging. */
  onIdleError?: (err: Error) => void;
}

/**
 * A Prisma client over node-postgres (`@prisma/adapter-pg`): queries are compiled in-process, so no
 * engine binary is needed at run time.
 */
export function createPrismaClient(databaseUrl: string, options: PrismaClientOptions = {}): PrismaClient {
  // One pool for Prisma and for the hot path's plain statements (`queryRows`).
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.poolSize ?? 10 });
  // An idle connection the server closes (restart, failover, pg_terminate_backend) is reported
  // here and dropped from the pool; the next query opens a new one. Without a listener the
  // 'error' event would crash the process.
  pool.on('error', (err) => options.onIdleError?.(err));
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  pools.set(client, pool);
  const disconnect = client.$disconnect.bind(client);
  // The adapter leaves a pool it was given open; the client's owner closes both with $disconnect.
  client.$disconnect = async () => {
    await disconnect();
    if (pools.delete(client)) await pool.end();
  };
  return client;
}

const pools = new WeakMap<object, pg.Pool>();

/**
 * Runs one statement with `$1..$n` parameters (cast them in the SQL) and returns its rows. On a
 * client from `createPrismaClient` it goes straight to node-postgres: the statements of every run
 * and step (the step transition functions, run creation, token lookup) skip Prisma's query layer,
 * which costs more CPU than the statement itself. Inside a transaction it goes through Prisma.
 * BIGINT columns come back as decimal text from node-postgres and as bigint from Prisma: read
 * money with `micros()`.
 */
export async function queryRows<T>(db: Db, text: string, params: readonly unknown[]): Promise<T[]> {
  const pool = pools.get(db);
  if (pool) return (await pool.query(text, params as unknown[])).rows as T[];
  return db.$queryRawUnsafe<T[]>(text, ...params);
}

/** Runs `work` in a transaction, or inside the caller's when `db` already is one. */
export function inTransaction<T>(db: Db, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return '$transaction' in db ? db.$transaction(work) : work(db);
}
