import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { isSupersededChecksum } from './superseded-migrations';
import { DEFAULT_FUNCTIONS_DIR, DEFAULT_MIGRATIONS_DIR, readMigrationFiles, readRepeatableFiles, type MigrationFile, type RepeatableFile } from './migration-files';

/**
 * Applies `prisma/migrations` without Prisma's schema engine (which cannot be downloaded on
 * offline machines), keeping `_prisma_migrations` exactly as `prisma migrate deploy` keeps it, so
 * either tool can take over from the other.
 */

/** Options of {@link applyMigrations}. */
export interface ApplyMigrationsOptions {
  /** Postgres URL of the database to migrate. */
  connectionString: string;
  /** Folder of migration folders; defaults to this checkout's `prisma/migrations`. */
  migrationsDir?: string;
  /** Folder of repeatable SQL files, applied after the migrations when changed; defaults to `prisma/functions` (none when absent). */
  functionsDir?: string;
  /** Receives one line per notable event (waiting for the lock, each migration applied). */
  log?: (message: string) => void;
  /** How long to wait for another migrator to finish; default 60 s. */
  lockTimeoutMs?: number;
}

/** What {@link applyMigrations} did. */
export interface ApplyMigrationsResult {
  /** Names of the migrations applied by this call, in order; empty when the database was up to date. */
  applied: string[];
  /** Repeatable SQL files (re-)applied by this call because they were new or changed. */
  repeatable: string[];
}

/** Why migrating was refused or failed. */
export type MigrationErrorCode = 'checksum_mismatch' | 'previous_migration_failed' | 'migration_failed' | 'lock_timeout';

/** Thrown by {@link applyMigrations}; `migration` names the migration concerned, when there is one. */
export class MigrationError extends Error {
  readonly code: MigrationErrorCode;
  readonly migration: string | undefined;

  constructor(options: { code: MigrationErrorCode; message: string; migration?: string; cause?: unknown }) {
    super(options.message, { cause: options.cause });
    this.name = 'MigrationError';
    this.code = options.code;
    this.migration = options.migration;
  }
}

// The key Prisma's schema engine locks, so this runner and `prisma migrate deploy` exclude each other too.
const PRISMA_ADVISORY_LOCK_KEY = 72707369;
const LOCK_POLL_MS = 200;

// Prisma's own DDL for its history table (schema engine, PostgreSQL connector).
const CREATE_HISTORY_TABLE = `CREATE TABLE IF NOT EXISTS _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
)`;

interface HistoryRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  logs: string | null;
}

async function acquireLock(client: pg.Client, timeoutMs: number, log: (m: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let announced = false;
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [PRISMA_ADVISORY_LOCK_KEY]);
    if (rows[0]?.locked) return;
    if (Date.now() >= deadline) {
      throw new MigrationError({
        code: 'lock_timeout',
        message: `another process has been migrating this database for more than ${timeoutMs} ms (advisory lock ${PRISMA_ADVISORY_LOCK_KEY} is held); try again when it has finished`,
      });
    }
    if (!announced) log('waiting for another process that is migrating this database');
    announced = true;
    await sleep(LOCK_POLL_MS);
  }
}

/**
 * Refuses to go on when the history says something is wrong: a migration that failed and was not
 * marked rolled back, or an applied migration whose file has changed since.
 */
function checkHistory(history: HistoryRow[], files: MigrationFile[]): void {
  const failed = history.find((row) => row.finished_at === null);
  if (failed) {
    throw new MigrationError({
      code: 'previous_migration_failed',
      migration: failed.migration_name,
      message:
        `migration ${failed.migration_name} failed earlier and nothing will be applied until that is resolved.\n` +
        `Its error: ${failed.logs ?? '(none recorded)'}\n` +
        'This runner applies each migration in a transaction, so a failed one left no changes behind: fix the migration, then mark ' +
        `the attempt rolled back (\`npx prisma migrate resolve --rolled-back ${failed.migration_name}\`, or ` +
        `UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = '${failed.migration_name}' AND finished_at IS NULL) and migrate again.`,
    });
  }
  const byName = new Map(files.map((f) => [f.name, f]));
  for (const row of history) {
    const file = byName.get(row.migration_name);
    if (file && file.checksum !== row.checksum && !isSupersededChecksum(row.migration_name, row.checksum)) {
      throw new MigrationError({
        code: 'checksum_mismatch',
        migration: row.migration_name,
        message:
          `migration ${row.migration_name} was changed after it was applied to this database (checksum ${row.checksum} recorded, ` +
          `${file.checksum} on disk). Applied migrations are immutable: restore the file and put the change in a new migration.`,
      });
    }
  }
}

/**
 * Records the current checksum of each applied migration whose recorded one is a known earlier
 * version (superseded-migrations.ts), so the history matches the files from now on.
 */
async function recordSuperseded(client: pg.Client, history: HistoryRow[], files: MigrationFile[], log: (m: string) => void): Promise<void> {
  for (const row of history) {
    const file = files.find((f) => f.name === row.migration_name);
    if (!file || file.checksum === row.checksum) continue;
    await client.query('UPDATE _prisma_migrations SET checksum = $1 WHERE migration_name = $2 AND checksum = $3', [file.checksum, row.migration_name, row.checksum]);
    log(`migration ${row.migration_name} was applied in an earlier version (checksum ${row.checksum}); recorded the current one, ${file.checksum}`);
  }
}

const CREATE_REPEATABLE_TABLE = `CREATE TABLE IF NOT EXISTS _svc_repeatable_sql (
    name        TEXT PRIMARY KEY NOT NULL,
    checksum    VARCHAR(64) NOT NULL,
    applied_at  TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
)`;

/**
 * Applies the repeatable files whose checksum differs from the one recorded (each in its own
 * transaction with its record): functions change in place, while migrations stay immutable.
 */
async function applyRepeatable(client: pg.Client, files: RepeatableFile[], log: (m: string) => void): Promise<string[]> {
  if (files.length === 0) return [];
  await client.query(CREATE_REPEATABLE_TABLE);
  const { rows } = await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM _svc_repeatable_sql');
  const recorded = new Map(rows.map((row) => [row.name, row.checksum]));
  const applied: string[] = [];
  for (const file of files.filter((f) => recorded.get(f.name) !== f.checksum)) {
    try {
      await client.query('BEGIN');
      await client.query(file.sql);
      await client.query(
        `INSERT INTO _svc_repeatable_sql (name, checksum) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
        [file.name, file.checksum],
      );
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      const reason = err instanceof Error ? err.message : String(err);
      throw new MigrationError({ code: 'migration_failed', migration: file.name, message: `repeatable SQL file ${file.name} failed and was rolled back: ${reason}`, cause: err });
    }
    applied.push(file.name);
    log(`applied repeatable ${file.name}`);
  }
  return applied;
}

async function applyOne(client: pg.Client, migration: MigrationFile): Promise<void> {
  const id = randomUUID();
  const startedAt = new Date();
  try {
    await client.query('BEGIN');
    // One simple-protocol query runs the whole multi-statement script, as Prisma does.
    await client.query(migration.sql);
    await client.query(
      `INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, NULL, NULL, $4, 1)`,
      [id, migration.checksum, migration.name, startedAt],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    const reason = err instanceof Error ? err.message : String(err);
    // Recorded like Prisma records a failure, so every replica (and `prisma migrate deploy`) stops here until someone looks.
    // If even that fails (the connection is gone), the error below still says what happened.
    await client
      .query(
        `INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
         VALUES ($1, $2, NULL, $3, $4, NULL, $5, 0)`,
        [id, migration.checksum, migration.name, `Migration ${migration.name} failed and was rolled back:\n${reason}`, startedAt],
      )
      .catch(() => undefined);
    throw new MigrationError({
      code: 'migration_failed',
      migration: migration.name,
      message: `migration ${migration.name} failed and was rolled back (nothing of it was applied): ${reason}`,
      cause: err,
    });
  }
}

/**
 * Applies every migration of `migrationsDir` that the database has not recorded yet, in name order,
 * each in its own transaction together with its `_prisma_migrations` row. Holds Prisma's advisory
 * lock throughout, so replicas starting at once apply each migration exactly once.
 */
export async function applyMigrations(options: ApplyMigrationsOptions): Promise<ApplyMigrationsResult> {
  const log = options.log ?? (() => undefined);
  const files = await readMigrationFiles(options.migrationsDir ?? DEFAULT_MIGRATIONS_DIR);
  const client = new pg.Client({ connectionString: options.connectionString });
  await client.connect();
  try {
    await acquireLock(client, options.lockTimeoutMs ?? 60_000, log);
    try {
      await client.query(CREATE_HISTORY_TABLE);
      const { rows: history } = await client.query<HistoryRow>(
        'SELECT migration_name, checksum, finished_at, logs FROM _prisma_migrations WHERE rolled_back_at IS NULL ORDER BY started_at',
      );
      checkHistory(history, files);
      await recordSuperseded(client, history, files, log);
      const done = new Set(history.map((row) => row.migration_name));
      const unknown = [...done].filter((name) => !files.some((f) => f.name === name));
      if (unknown.length > 0) log(`the database has migrations this checkout does not know: ${unknown.join(', ')} (a newer release migrated it?)`);
      const applied: string[] = [];
      for (const migration of files.filter((f) => !done.has(f.name))) {
        const started = Date.now();
        await applyOne(client, migration);
        applied.push(migration.name);
        log(`applied ${migration.name} in ${Date.now() - started} ms`);
      }
      const repeatable = await applyRepeatable(client, await readRepeatableFiles(options.functionsDir ?? DEFAULT_FUNCTIONS_DIR), log);
      return { applied, repeatable };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end();
  }
}
