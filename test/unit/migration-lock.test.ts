import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Landed migrations are immutable: a database that applied one records its checksum, and the
 * runner refuses a file that no longer matches it. Every migration's SHA-256 is pinned: the older
 * ones in prisma/migrations/lock.json, which is itself a landed file and never changes now, and
 * each later one by a `migration.sql.sha256` file in its own folder, added with the migration.
 * This test fails when a pinned file changes, and when a migration folder is not pinned.
 */
const MIGRATIONS = path.join(__dirname, '..', '..', 'prisma', 'migrations');

const lock = JSON.parse(fs.readFileSync(path.join(MIGRATIONS, 'lock.json'), 'utf8')) as { migrations: Record<string, string> };
const folders = fs
  .readdirSync(MIGRATIONS)
  .filter((name) => fs.statSync(path.join(MIGRATIONS, name)).isDirectory())
  .sort();
/** A folder's pinned checksum: lock.json's line, else the folder's own `migration.sql.sha256`. */
function pinOf(name: string): string | undefined {
  if (name in lock.migrations) return lock.migrations[name];
  const file = path.join(MIGRATIONS, name, 'migration.sql.sha256');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : undefined;
}
const sha256 = (name: string) => createHash('sha256').update(fs.readFileSync(path.join(MIGRATIONS, name, 'migration.sql'))).digest('hex');

describe('the migration lock (prisma/migrations/lock.json, then a migration.sql.sha256 per folder)', () => {
  it('pins every migration folder', () => {
    const unpinned = folders.filter((name) => pinOf(name) === undefined);
    if (unpinned.length > 0) {
      throw new Error(
        `migration folders without a pinned checksum: ${unpinned.join(', ')}. Add to each, once the migration is final, ` +
          `its checksum file: sha256sum prisma/migrations/<folder>/migration.sql | cut -d' ' -f1 > prisma/migrations/<folder>/migration.sql.sha256; ` +
          'from then on neither file changes (lock.json is a landed file too: never add to it).',
      );
    }
  });

  it('names no migration that does not exist', () => {
    expect(Object.keys(lock.migrations).filter((name) => !folders.includes(name))).toEqual([]);
  });

  it.each(folders.filter((name) => pinOf(name) !== undefined))('leaves %s as it landed', (name) => {
    const actual = sha256(name);
    if (actual !== pinOf(name)) {
      throw new Error(
        `prisma/migrations/${name}/migration.sql changed after it landed (sha256 ${actual}, pinned ${pinOf(name)}). ` +
          'Databases that applied it would refuse to migrate: restore the file and put the change in a new migration ' +
          '(functions belong in prisma/functions, which are re-applied when they change).',
      );
    }
  });
});
