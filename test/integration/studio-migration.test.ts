import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { applyMigrations } from '../../services/store/migration-runner';
import { DEFAULT_MIGRATIONS_DIR } from '../../services/store/migration-files';
import { createEmptyDatabase, type TestDatabase } from '../support/database';
import { stack } from '../support/stack';

const STUDIO = '20261125014800_studio';
const adder = (a: number) => JSON.stringify({ version: 2, nodes: [{ id: 'add', uses: 'math-add', inputs: { a, b: 1 } }] });

describe('the studio migration on workflows saved before it', () => {
  let db: TestDatabase;
  const temps: string[] = [];
  let client: pg.Client;

  afterAll(async () => {
    await client?.end();
    await db?.drop();
    await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  const one = async <T extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<T> => (await client.query<T>(sql, values)).rows[0]!;

  it('takes the time of the last draft change from the newest version, so only a changed draft is pending', async () => {
    db = await createEmptyDatabase(stack().postgres, 'svc_studio_migr');
    const before = await mkdtemp(path.join(tmpdir(), 'svc-migrations-'));
    const noFunctions = await mkdtemp(path.join(tmpdir(), 'svc-functions-'));
    temps.push(before, noFunctions);
    await cp(DEFAULT_MIGRATIONS_DIR, before, { recursive: true });
    // A database from before the studio: the migrations older than it (later ones may change what it made).
    const later = (await readdir(before, { withFileTypes: true })).filter((e) => e.isDirectory() && e.name >= STUDIO).map((e) => e.name).sort();
    await Promise.all(later.map((name) => rm(path.join(before, name), { recursive: true })));
    await applyMigrations({ connectionString: db.url, migrationsDir: before, functionsDir: noFunctions });
    client = new pg.Client({ connectionString: db.url });
    await client.connect();

    const org = await one<{ id: string }>("INSERT INTO organizations (slug, name) VALUES ('old', 'Old') RETURNING id");
    /** A workflow with `draft` and versions of the given definitions (oldest first), published a minute apart. */
    const workflow = async (slug: string, draft: string | null, versions: string[]): Promise<string> => {
      const row = await one<{ id: string }>(
        "INSERT INTO workflows (org_id, slug, name, draft, updated_at) VALUES ($1, $2, $4, $3::jsonb, now() - interval '1 hour') RETURNING id",
        [org.id, versions.length > 0 ? slug : null, draft, slug],
      );
      for (const [i, definition] of versions.entries()) {
        await client.query(
          `INSERT INTO workflow_versions (workflow_id, major, minor, patch, sequence, definition, created_at)
           VALUES ($1, $2::int, 0, 0, $2::int, $3::jsonb, now() - interval '30 minutes' + $2::int * interval '1 minute')`,
          [row.id, i + 1, definition],
        );
      }
      return row.id;
    };
    const unchanged = await workflow('unchanged', adder(2), [adder(1), adder(2)]);
    const changed = await workflow('changed', adder(3), [adder(1), adder(2)]);
    const rolledBackTo = await workflow('rolled-back', adder(1), [adder(1), adder(2)]);
    const unpublished = await workflow('unpublished', adder(1), []);
    const empty = await workflow('empty', null, []);

    await expect(applyMigrations({ connectionString: db.url, functionsDir: noFunctions })).resolves.toMatchObject({ applied: later });

    const state = (id: string) =>
      one<{ changed_at: Date | null; updated_at: Date; newest: Date | null; layout: unknown }>(
        `SELECT w.draft_changed_at AS changed_at, w.updated_at, w.draft_layout AS layout,
                (SELECT max(created_at) FROM workflow_versions v WHERE v.workflow_id = w.id) AS newest
           FROM workflows w WHERE w.id = $1`,
        [id],
      );
    // The draft is the newest version's definition: changed when it was published, nothing pending.
    const a = await state(unchanged);
    expect(a.changed_at).toEqual(a.newest);
    // Any other draft changed after the newest version (also one equal to an older version).
    for (const id of [changed, rolledBackTo]) {
      const b = await state(id);
      expect(b.changed_at!.getTime()).toBeGreaterThan(b.newest!.getTime());
    }
    // Never published: its last update; no draft: no change.
    const c = await state(unpublished);
    expect(c.changed_at).toEqual(c.updated_at);
    expect((await state(empty)).changed_at).toBeNull();
    expect(a.layout).toBeNull();
    const versionColumns = await one<{ note: string | null; layout: unknown }>('SELECT note, layout FROM workflow_versions LIMIT 1');
    expect(versionColumns).toEqual({ note: null, layout: null });
  });
});
