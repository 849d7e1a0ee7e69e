/**
 * `make migrate` (and `make run` before serving): applies pending migrations of prisma/migrations
 * to DATABASE_URL with the service's own runner (no Prisma schema engine needed) and says what it
 * applied. Safe to run from several replicas at once.
 */
import { ConfigError, loadSettings } from '../services/platform/config';
import { applyMigrations, MigrationError } from '../services/store';

async function main(): Promise<void> {
  const { databaseUrl } = loadSettings(['databaseUrl']);
  const started = Date.now();
  const { applied } = await applyMigrations({ connectionString: databaseUrl, log: (line) => console.log(line) });
  const took = Date.now() - started;
  console.log(applied.length === 0 ? `database is up to date (${took} ms)` : `applied ${applied.length} migration(s) in ${took} ms`);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MigrationError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
