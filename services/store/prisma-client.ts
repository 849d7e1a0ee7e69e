import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from './prisma-generated';

export { PrismaClient };

/**
 * What a repository runs its queries on: the client, or the handle of an interactive transaction
 * (`prisma.$transaction(async (tx) => ...)`), so several repositories can commit together.
 */
export type Db = PrismaClient | Prisma.TransactionClient;

/** Options of {@link createPrismaClient}. */
export interface PrismaClientOptions {
  /** Most connections this client opens; default 10. */
  poolSize?: number;
  /** Told when an idle pooled connection fails (the pool replaces it); for logging. */
  onIdleError?: (err: Error) => void;
}

/**
 * Prisma alone, for processes and tests that need no hot path (the admin command, the dev
 * bootstrap): its adapter owns its pool, and `$disconnect` closes it. The service uses
 * `createDatabase` (database.ts), Prisma and the hot paths' pool together.
 */
export function createPrismaClient(databaseUrl: string, options: PrismaClientOptions = {}): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 }, { onPoolError: (err) => options.onIdleError?.(err) }),
  });
}

/**
 * Runs one statement with `$1..$n` parameters (cast them in the SQL) through Prisma, on the client
 * or inside the caller's transaction. BIGINT columns come back as bigint: read money with
 * `microsFromDb`.
 */
export function rawRows<T>(db: Db, text: string, params: readonly unknown[]): Promise<T[]> {
  return db.$queryRawUnsafe<T[]>(text, ...params);
}

/** Runs `work` in a transaction, or inside the caller's when `db` already is one. */
export function inTransaction<T>(db: Db, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return '$transaction' in db ? db.$transaction(work) : work(db);
}

/**
 * Answers once Postgres answers `SELECT 1` through Prisma, or throws Prisma's error: the
 * readiness probe asks the client the API's requests use, and reports that error's message.
 */
export async function pingPostgres(db: Db): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}
