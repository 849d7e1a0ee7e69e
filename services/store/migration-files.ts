import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

/** One migration of `prisma/migrations/`, in Prisma's folder format (`<timestamp>_<name>/migration.sql`). */
export interface MigrationFile {
  /** The folder name, e.g. `20260101120000_init`: Prisma's `migration_name`. */
  name: string;
  /** The script, as read from disk. */
  sql: string;
  /** SHA-256 hex of the script's bytes: what Prisma stores as `checksum`. */
  checksum: string;
}

/** `prisma/migrations` of this checkout, found relative to this file so the working directory does not matter. */
export const DEFAULT_MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'prisma', 'migrations');

/** SHA-256 hex of a migration script, as Prisma computes its checksum. */
export function migrationChecksum(script: string | Buffer): string {
  return createHash('sha256').update(script).digest('hex');
}

/**
 * Reads every migration folder, ordered by name as Prisma orders them (the timestamp prefix makes
 * that chronological). Files beside the folders (`migration_lock.toml`) are not migrations.
 */
export async function readMigrationFiles(dir: string = DEFAULT_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`the migrations directory ${dir} does not exist`);
    throw err;
  }
  const migrations: MigrationFile[] = [];
  for (const name of entries.sort()) {
    if (!(await stat(path.join(dir, name))).isDirectory()) continue;
    const file = path.join(dir, name, 'migration.sql');
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`the migration folder ${name} has no migration.sql (${file})`);
      throw err;
    }
    migrations.push({ name, sql: bytes.toString('utf8'), checksum: migrationChecksum(bytes) });
  }
  return migrations;
}

/** One repeatable SQL file of `prisma/functions/` (functions re-created whenever the file changes). */
export interface RepeatableFile {
  /** The file name, e.g. `step-reserve.sql`. */
  name: string;
  sql: string;
  checksum: string;
}

/** `prisma/functions` of this checkout: SQL functions kept in repeatable files, not in migrations. */
export const DEFAULT_FUNCTIONS_DIR = path.resolve(__dirname, '..', '..', 'prisma', 'functions');

/** Reads every `*.sql` of the repeatable folder in name order; none when the folder does not exist. */
export async function readRepeatableFiles(dir: string = DEFAULT_FUNCTIONS_DIR): Promise<RepeatableFile[]> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const files: RepeatableFile[] = [];
  for (const name of entries.filter((n) => n.endsWith('.sql')).sort()) {
    const bytes = await readFile(path.join(dir, name));
    files.push({ name, sql: bytes.toString('utf8'), checksum: migrationChecksum(bytes) });
  }
  return files;
}
