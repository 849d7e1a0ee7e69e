import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Landed migrations are immutable: a database that applied one records its checksum, and the
 * runner refuses a file that no longer matches it. prisma/migrations/lock.json pins every
 * migration's SHA-256; this test fails when a pinned file changes, and when a migration folder is
 * not pinned yet.
 */
const MIGRATIONS = path.join(__dirname, '..', '..', 'prisma', 'migrations');

const lock = JSON.parse(fs.readFileSync(path.join(MIGRATIONS, 'lock.json'), 'utf8')) as { migrations: Record<string, string> };
const folders = fs
  .readdirSync(MIGRATIONS)
  .filter((name) => fs.statSync(path.join(MIGRATIONS, name)).isDirectory())
  .sort();
const sha256 = (name: string) => createHash('sha256').update(fs.readFileSync(path.join(MIGRATIONS, name, 'migration.sql'))).digest('hex');

describe('the migration lock (prisma/migrations/lock.json)', () => {
  it('pins every migration folder', () => {
    const unpinned = folders.filter((name) => !(name in lock.migrations));
    if (unpinned.length > 0) {
      throw new Error(
        `migration folders missing from prisma/migrations/lock.json: ${unpinned.join(', ')}. Add each as "<folder>": "<sha256 of its migration.sql>" ` +
          `(sha256sum prisma/migrations/<folder>/migration.sql) once the migration is final; from then on it never changes.`,
      );
    }
  });

  it('names no migration that does not exist', () => {
    expect(Object.keys(lock.migrations).filter((name) => !folders.includes(name))).toEqual([]);
  });

  it.each(folders.filter((name) => name in lock.migrations))('leaves %s as it landed', (name) => {
    const actual = sha256(name);
    if (actual !== lock.migrations[name]) {
      throw new Error(
        `prisma/migrations/${name}/migration.sql changed after it landed (sha256 ${actual}, pinned ${lock.migrations[name]}). ` +
          'Databases that applied it would refuse to migrate: restore the file and put the change in a new migration ' +
          '(functions belong in prisma/functions, which are re-applied when they change).',
      );
    }
  });
});
