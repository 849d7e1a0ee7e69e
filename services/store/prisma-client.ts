import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from './generated/prisma/client';

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
}

/**
 * A Prisma client over node-postgres (`@prisma/adapter-pg`): queries are compiled in-process, so no
 * engine binary is needed at run time.
 */
export function createPrismaClient(databaseUrl: string, options: PrismaClientOptions = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 }) });
}

/** Runs `work` in a transaction, or inside the caller's when `db` already is one. */
export function inTransaction<T>(db: Db, work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return '$transaction' in db ? db.$transaction(work) : work(db);
}
