import { execFile } from 'node:child_process';
import { access, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { applyMigrations, MigrationError } from '../../services/store/migration-runner';
import { DEFAULT_MIGRATIONS_DIR, migrationChecksum, readMigrationFiles, readRepeatableFiles } from '../../services/store/migration-files';
import { createEmptyDatabase, type TestDatabase } from '../support/database';
import { schemaSnapshot } from '../support/schema-snapshot';
import { stack } from '../support/stack';

const ROOT = path.resolve(__dirname, '..', '..');
const run = promisify(execFile);

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

interface HistoryRow {
  id: string;
  checksum: string;
  finished_at: Date | null;
  migration_name: string;
  logs: string | null;
  rolled_back_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
}

/** Earlier versions of a migration edited after it had been applied (see services/store/superseded-migrations.ts). */
const EDITED = '20261123161500_step_transition_functions';
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'migrations', EDITED);
// The migrations that existed at the commits of those versions (money holds came later).
const MIGRATIONS_THEN = ['20261122212801_init', '20261123155315_artifact_sweep_index', EDITED, '20261123162859_device_authorizations', '20261123163800_workflow_invariants'];

const history = (url: string) => query<HistoryRow>(url, 'SELECT * FROM _prisma_migrations ORDER BY started_at, migration_name');

/** `prisma/tools/check-drift.ts` in a child process: the wasm engine is an ES module Jest cannot load. */
async function checkDrift(url: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['prisma/tools/check-drift.ts', '--url', url], { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('migration runner', () => {
  const databases: TestDatabase[] = [];
  const temps: string[] = [];

  async function emptyDatabase(): Promise<TestDatabase> {
    const db = await createEmptyDatabase(stack().postgres, 'svc_migr');
    databases.push(db);
    return db;
  }

  /** A copy of prisma/migrations that a test may change. */
  async function migrationsCopy(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-migrations-'));
    temps.push(dir);
    await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
    return dir;
  }

  afterAll(async () => {
    await Promise.all(databases.map((db) => db.drop()));
    await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('migrates an empty database and records every migration as prisma migrate deploy does', async () => {
    const db = await emptyDatabase();
    const files = await readMigrationFiles();
    expect(files.length).toBeGreaterThan(0);

    const { applied } = await applyMigrations({ connectionString: db.url });

    expect(applied).toEqual(files.map((f) => f.name));
    const rows = await history(db.url);
    expect(rows.map((r) => r.migration_name)).toEqual(files.map((f) => f.name));
    for (const [i, row] of rows.entries()) {
      const onDisk = await readFile(path.join(DEFAULT_MIGRATIONS_DIR, row.migration_name, 'migration.sql'));
      expect(row).toMatchObject({ checksum: migrationChecksum(onDisk), logs: null, rolled_back_at: null, applied_steps_count: 1 });
      expect(row.checksum).toBe(files[i]!.checksum);
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.finished_at).toBeInstanceOf(Date);
    }
    const tables = await query<{ table_name: string }>(db.url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['organizations', 'users', 'access_tokens', 'runs', 'steps', 'ledger_entries']));
  });

  it('applies nothing when the database is up to date', async () => {
    const db = await emptyDatabase();
    await applyMigrations({ connectionString: db.url });
    const before = await history(db.url);

    await expect(applyMigrations({ connectionString: db.url })).resolves.toEqual({ applied: [], repeatable: [] });
    expect(await history(db.url)).toEqual(before);
  });

  it('applies only the new migration when one is added', async () => {
    const db = await emptyDatabase();
    const dir = await migrationsCopy();
    await applyMigrations({ connectionString: db.url, migrationsDir: dir });
    await mkdir(path.join(dir, '29991231000000_add_note'));
    await writeFile(path.join(dir, '29991231000000_add_note', 'migration.sql'), 'ALTER TABLE "organizations" ADD COLUMN "note" TEXT;\n');

    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).resolves.toEqual({ applied: ['29991231000000_add_note'], repeatable: [] });
    const columns = await query(db.url, "SELECT 1 FROM information_schema.columns WHERE table_name = 'organizations' AND column_name = 'note'");
    expect(columns).toHaveLength(1);
  });

  it('re-applies a repeatable SQL file when it changes, and only then', async () => {
    const db = await emptyDatabase();
    const functions = await mkdtemp(path.join(tmpdir(), 'svc-functions-'));
    temps.push(functions);
    await writeFile(path.join(functions, 'answer.sql'), 'CREATE OR REPLACE FUNCTION svc_answer() RETURNS int LANGUAGE sql AS $$ SELECT 41 $$;\n');
    await expect(applyMigrations({ connectionString: db.url, functionsDir: functions })).resolves.toMatchObject({ repeatable: ['answer.sql'] });
    await expect(applyMigrations({ connectionString: db.url, functionsDir: functions })).resolves.toMatchObject({ repeatable: [] });
    await writeFile(path.join(functions, 'answer.sql'), 'CREATE OR REPLACE FUNCTION svc_answer() RETURNS int LANGUAGE sql AS $$ SELECT 42 $$;\n');

    await expect(applyMigrations({ connectionString: db.url, functionsDir: functions })).resolves.toMatchObject({ applied: [], repeatable: ['answer.sql'] });
    expect(await query<{ n: number }>(db.url, 'SELECT svc_answer() AS n')).toEqual([{ n: 42 }]);
  });

  it('migrates a database from before balance holds forward: overdrafts written off, unfinished runs holding what they may still spend', async () => {
    const db = await emptyDatabase();
    const before = await migrationsCopy();
    // The database as the main before holds left it: money_holds and every later migration missing.
    const later = (await readdir(before)).filter((name) => name >= '20261124210000_money_holds' && !name.includes('.')).sort();
    for (const name of later) await rm(path.join(before, name), { recursive: true });
    const noFunctions = await mkdtemp(path.join(tmpdir(), 'svc-functions-'));
    temps.push(noFunctions);
    await applyMigrations({ connectionString: db.url, migrationsDir: before, functionsDir: noFunctions });
    // What the old admission allowed: an organization overdrawn by concurrent runs, one of them still running and partly charged.
    const [org] = await query<{ id: string }>(db.url, "INSERT INTO organizations (slug, name, balance_micros) VALUES ('old', 'Old', -137) RETURNING id");
    const [user] = await query<{ id: string }>(db.url, "INSERT INTO users (email, name) VALUES ('old@example.test', 'Old') RETURNING id");
    const [running] = await query<{ id: string }>(
      db.url,
      "INSERT INTO runs (org_id, user_id, definition, inputs, cap_micros, status, spent_micros) VALUES ($1, $2, '{}', '{}', 500000, 'running', 2137) RETURNING id",
      [org!.id, user!.id],
    );
    await query(db.url, "INSERT INTO ledger_entries (org_id, amount_micros, kind, run_id, note) VALUES ($1, -2137, 'run_charge', $2, 'step a')", [org!.id, running!.id]);

    await expect(applyMigrations({ connectionString: db.url })).resolves.toMatchObject({ applied: later });
    const [after] = await query<{ balance_micros: string; held_micros: string }>(db.url, 'SELECT balance_micros, held_micros FROM organizations WHERE id = $1', [org!.id]);
    expect(after).toEqual({ balance_micros: '0', held_micros: String(500000 - 2137) });
    const [run] = await query<{ authorized_micros: string; charged_micros: string; held_micros: string; settled_micros: string }>(
      db.url,
      'SELECT authorized_micros, charged_micros, held_micros, settled_micros FROM runs WHERE id = $1',
      [running!.id],
    );
    // deferred_settlement: the charge made before it was taken from the balance at once, so it is settled.
    expect(run).toEqual({ authorized_micros: '500000', charged_micros: '2137', held_micros: String(500000 - 2137), settled_micros: '2137' });
    expect(await query(db.url, 'SELECT svc_org_balance($1) AS balance', [org!.id])).toEqual([{ balance: '0' }]);
    const entries = await query<{ amount_micros: string; kind: string }>(db.url, "SELECT amount_micros, kind FROM ledger_entries WHERE org_id = $1 AND kind = 'adjustment'", [org!.id]);
    expect(entries).toEqual([{ amount_micros: '137', kind: 'adjustment' }]);
  });

  it('migrates runs forward to partial indexes: the status ones hold unfinished runs only, the workflow ones runs of a workflow only', async () => {
    const db = await emptyDatabase();
    const before = await migrationsCopy();
    const later = (await readdir(before)).filter((name) => name >= '20261128164115_runs_partial_indexes' && !name.includes('.')).sort();
    for (const name of later) await rm(path.join(before, name), { recursive: true });
    const noFunctions = await mkdtemp(path.join(tmpdir(), 'svc-functions-'));
    temps.push(noFunctions);
    await applyMigrations({ connectionString: db.url, migrationsDir: before, functionsDir: noFunctions });
    const [org] = await query<{ id: string }>(db.url, "INSERT INTO organizations (slug, name) VALUES ('idx', 'Idx') RETURNING id");
    const [user] = await query<{ id: string }>(db.url, "INSERT INTO users (email, name) VALUES ('idx@example.test', 'Idx') RETURNING id");
    const [workflow] = await query<{ id: string }>(db.url, "INSERT INTO workflows (org_id, name) VALUES ($1, 'w') RETURNING id", [org!.id]);
    const run = (status: string, workflowId: string | null) =>
      query(db.url, "INSERT INTO runs (org_id, user_id, workflow_id, definition, inputs, cap_micros, status) VALUES ($1, $2, $3, '{}', '{}', 1000, $4)", [org!.id, user!.id, workflowId, status]);
    await run('running', null);
    await run('pending', workflow!.id);
    await run('completed', null);
    await run('failed', workflow!.id);

    await expect(applyMigrations({ connectionString: db.url, functionsDir: noFunctions })).resolves.toMatchObject({ applied: later });
    // An index's build records how many entries it made.
    const entries = await query<{ name: string; n: number }>(
      db.url,
      "SELECT relname AS name, reltuples::int AS n FROM pg_class WHERE relname IN ('runs_unfinished_created_at_idx', 'runs_unfinished_org_id_idx', 'runs_workflow_id_idx', 'runs_org_id_workflow_id_created_at_idx', 'runs_workflow_version_id_idx') ORDER BY relname",
    );
    expect(entries).toEqual([
      { name: 'runs_org_id_workflow_id_created_at_idx', n: 2 },
      { name: 'runs_unfinished_created_at_idx', n: 2 },
      { name: 'runs_unfinished_org_id_idx', n: 2 },
      { name: 'runs_workflow_id_idx', n: 2 },
      { name: 'runs_workflow_version_id_idx', n: 0 },
    ]);
  });

  /** A database migrated by this runner from `names` of prisma/migrations (with `replace` overriding files), no functions. */
  async function migratedThen(names: readonly string[], replace: Record<string, string> = {}): Promise<TestDatabase> {
    const db = await emptyDatabase();
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-migrations-then-'));
    const noFunctions = await mkdtemp(path.join(tmpdir(), 'svc-functions-'));
    temps.push(dir, noFunctions);
    for (const name of names) {
      await mkdir(path.join(dir, name));
      const sql = replace[name] ?? (await readFile(path.join(DEFAULT_MIGRATIONS_DIR, name, 'migration.sql'), 'utf8'));
      await writeFile(path.join(dir, name, 'migration.sql'), sql);
    }
    await applyMigrations({ connectionString: db.url, migrationsDir: dir, functionsDir: noFunctions });
    return db;
  }

  it('migrates forward from the first migration alone to the schema and functions of a fresh database', async () => {
    const fresh = await emptyDatabase();
    await applyMigrations({ connectionString: fresh.url });
    const files = await readMigrationFiles();
    const db = await migratedThen([files[0]!.name]);

    const { applied } = await applyMigrations({ connectionString: db.url });

    expect(applied).toEqual(files.slice(1).map((f) => f.name));
    expect(await schemaSnapshot(db.url)).toEqual(await schemaSnapshot(fresh.url));
  });

  it.each(['d17d840', '118dc01', '438b572'])(
    'migrates a database that applied %s’s version of the edited step transition migration: current checksum recorded, same schema and functions as a fresh one',
    async (commit) => {
      const fresh = await emptyDatabase();
      await applyMigrations({ connectionString: fresh.url });
      const old = await readFile(path.join(FIXTURES, `${commit}.sql`));
      const db = await migratedThen(MIGRATIONS_THEN, { [EDITED]: old.toString('utf8') });
      const [recorded] = await query<{ checksum: string }>(db.url, 'SELECT checksum FROM _prisma_migrations WHERE migration_name = $1', [EDITED]);
      expect(recorded!.checksum).toBe(migrationChecksum(old));
      // The old positional functions are there before.
      const before = await query<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'svc_complete_step' AND pronargs > 1");
      expect(before).toEqual([{ n: 1 }]);

      // Every migration that landed after the step transition edit (money holds, then whatever came later).
      const later = (await readMigrationFiles()).map((f) => f.name).filter((name) => name >= '20261124210000_money_holds');
      await expect(applyMigrations({ connectionString: db.url })).resolves.toMatchObject({ applied: later });

      const current = (await readMigrationFiles()).find((f) => f.name === EDITED)!;
      const [after] = await query<{ checksum: string }>(db.url, 'SELECT checksum FROM _prisma_migrations WHERE migration_name = $1', [EDITED]);
      expect(after!.checksum).toBe(current.checksum);
      expect(await schemaSnapshot(db.url)).toEqual(await schemaSnapshot(fresh.url));
      await expect(applyMigrations({ connectionString: db.url })).resolves.toEqual({ applied: [], repeatable: [] });
    },
  );

  it('replaces the positional step functions of the last release (prisma/functions/step-transitions.sql) with the jsonb ones', async () => {
    const fresh = await emptyDatabase();
    await applyMigrations({ connectionString: fresh.url });
    const db = await emptyDatabase();
    const released = await mkdtemp(path.join(tmpdir(), 'svc-functions-'));
    temps.push(released);
    await cp(path.join(ROOT, 'test', 'fixtures', 'functions', 'step-transitions.78344b4.sql'), path.join(released, 'step-transitions.sql'));
    await cp(path.join(ROOT, 'prisma', 'functions', 'money-checks.sql'), path.join(released, 'money-checks.sql'));
    await applyMigrations({ connectionString: db.url, functionsDir: released });

    await expect(applyMigrations({ connectionString: db.url })).resolves.toMatchObject({ applied: [] });

    expect(await schemaSnapshot(db.url)).toEqual(await schemaSnapshot(fresh.url));
  });

  it('refuses to migrate when an applied migration no longer matches its recorded checksum', async () => {
    const db = await emptyDatabase();
    await applyMigrations({ connectionString: db.url });
    const [first] = await history(db.url);
    await query(db.url, 'UPDATE _prisma_migrations SET checksum = $1 WHERE id = $2', ['0'.repeat(64), first!.id]);

    const attempt = applyMigrations({ connectionString: db.url });
    await expect(attempt).rejects.toBeInstanceOf(MigrationError);
    await expect(attempt).rejects.toMatchObject({ code: 'checksum_mismatch', migration: first!.migration_name });
    await expect(attempt).rejects.toThrow(/was changed after it was applied/);
  });

  it('refuses to migrate when an applied migration file was edited', async () => {
    const db = await emptyDatabase();
    const dir = await migrationsCopy();
    await applyMigrations({ connectionString: db.url, migrationsDir: dir });
    const [first] = await readMigrationFiles(dir);
    await writeFile(path.join(dir, first!.name, 'migration.sql'), `${first!.sql}\n-- edited afterwards\n`);

    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).rejects.toMatchObject({ code: 'checksum_mismatch', migration: first!.name });
  });

  it('rolls a failing migration back, records the failure, and refuses to go on until it is resolved', async () => {
    const db = await emptyDatabase();
    const dir = await migrationsCopy();
    await mkdir(path.join(dir, '29991231000000_broken'));
    await writeFile(path.join(dir, '29991231000000_broken', 'migration.sql'), 'CREATE TABLE "half_done" ("id" INT);\nSELECT 1 / 0;\n');
    await mkdir(path.join(dir, '29991231000001_after'));
    await writeFile(path.join(dir, '29991231000001_after', 'migration.sql'), 'CREATE TABLE "after_broken" ("id" INT);\n');

    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).rejects.toMatchObject({ code: 'migration_failed', migration: '29991231000000_broken' });
    const tables = await query(db.url, "SELECT table_name FROM information_schema.tables WHERE table_name IN ('half_done', 'after_broken')");
    expect(tables).toEqual([]);
    const failed = (await history(db.url)).find((r) => r.migration_name === '29991231000000_broken');
    expect(failed).toMatchObject({ finished_at: null, rolled_back_at: null, applied_steps_count: 0 });
    expect(failed!.logs).toMatch(/division by zero/);

    // Fixed on disk, but still refused: someone has to acknowledge the failure first.
    await writeFile(path.join(dir, '29991231000000_broken', 'migration.sql'), 'CREATE TABLE "half_done" ("id" INT);\n');
    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).rejects.toMatchObject({ code: 'previous_migration_failed', migration: '29991231000000_broken' });

    // What `prisma migrate resolve --rolled-back` does; then the fixed migration and the next one apply.
    await query(db.url, "UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = '29991231000000_broken'");
    await expect(applyMigrations({ connectionString: db.url, migrationsDir: dir })).resolves.toMatchObject({ applied: ['29991231000000_broken', '29991231000001_after'] });
  });

  it('applies each migration once when several replicas migrate at the same time', async () => {
    const db = await emptyDatabase();
    const files = await readMigrationFiles();
    const results = await Promise.all(Array.from({ length: 4 }, () => applyMigrations({ connectionString: db.url })));

    expect(results.flatMap((r) => r.applied).sort()).toEqual(files.map((f) => f.name).sort());
    expect(await history(db.url)).toHaveLength(files.length);
  });

  it("deletes an organization's ledger entries with it, the ledger's org_id having no foreign key (prisma/functions/ledger-entries.sql)", async () => {
    const db = await emptyDatabase();
    await applyMigrations({ connectionString: db.url });
    const [gone, kept] = await query<{ id: string }>(db.url, "INSERT INTO organizations (slug, name, balance_micros) VALUES ('gone', 'Gone', 5), ('kept', 'Kept', 7) RETURNING id");
    await query(db.url, "INSERT INTO ledger_entries (org_id, amount_micros, kind) VALUES ($1::uuid, 5, 'credit'), ($2::uuid, 7, 'credit')", [gone!.id, kept!.id]);
    const keys = await query<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = 'ledger_entries'::regclass AND confrelid = 'organizations'::regclass");
    expect(keys).toEqual([{ n: 0 }]);
    await query(db.url, 'DELETE FROM organizations WHERE id = $1::uuid', [gone!.id]);
    await expect(query(db.url, 'SELECT org_id, amount_micros::int AS amount FROM ledger_entries')).resolves.toEqual([{ org_id: kept!.id, amount: 7 }]);
  });

  it('leaves no drift between the migrated database and schema.prisma', async () => {
    const db = await emptyDatabase();
    await applyMigrations({ connectionString: db.url });

    const clean = await checkDrift(db.url);
    expect(clean.stderr).toBe('');
    expect(clean).toMatchObject({ code: 0 });
    expect(clean.stdout).toMatch(/no drift/);

    // The check is not vacuous: a database missing a column is reported, with the SQL to fix it.
    await query(db.url, 'ALTER TABLE "runs" DROP COLUMN "error"');
    const drifted = await checkDrift(db.url);
    expect(drifted.code).toBe(2);
    expect(drifted.stdout).toMatch(/ALTER TABLE "runs" ADD COLUMN\s+"error" JSONB/);
  }, 60_000);
});

describe('the headers of prisma/functions', () => {
  /** Every `-- ` comment line of a repeatable SQL file: its header and each function's. */
  const commentsOf = (sql: string) =>
    sql
      .split('\n')
      .filter((line) => line.trimStart().startsWith('--'))
      .join('\n');

  it('name callers that exist: every services/...ts file, and every Repository.method in it', async () => {
    const missing: string[] = [];
    for (const file of await readRepeatableFiles()) {
      const comments = commentsOf(file.sql);
      for (const [caller] of comments.matchAll(/services\/[\w./-]+?\.ts\b/g)) {
        if (!(await access(path.join(ROOT, caller)).then(() => true, () => false))) missing.push(`${file.name}: ${caller}`);
      }
      for (const [named, className, methods] of comments.matchAll(/\b([A-Z]\w*Repository)\.(\w+(?:\/\w+)*)/g)) {
        const fileName = className!.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
        const source = await readFile(path.join(ROOT, 'services', 'store', `${fileName}.ts`), 'utf8').catch(() => '');
        const absent = methods!.split('/').filter((method) => !source.includes(`class ${className}`) || !new RegExp(`^\\s+(?:async )?${method}\\(`, 'm').test(source));
        if (absent.length > 0) missing.push(`${file.name}: ${named}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
