import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { applyMigrations } from '../../services/store/migration-runner';
import { eventually } from './eventually';

/**
 * Databases for integration tests: global setup migrates one template database once; each test
 * file then gets its own copy (`CREATE DATABASE ... TEMPLATE`, a file copy: milliseconds), so test
 * files run in parallel without seeing each other's rows.
 */

/** A Postgres server the tests may create and drop databases on. */
export interface PostgresServer {
  host: string;
  port: number;
  user: string;
  password?: string;
}

/** The migrated database every test database is copied from. */
export const TEMPLATE_DATABASE = 'svc_template';

/** A database created for one test file. */
export interface TestDatabase {
  name: string;
  /** `postgresql://` URL of the database. */
  url: string;
  /** Drops the database, closing whatever connections are still open to it. */
  drop(): Promise<void>;
}

/** `postgresql://` URL of one database on the server. */
export function databaseUrl(server: PostgresServer, database: string): string {
  const auth = encodeURIComponent(server.user) + (server.password ? `:${encodeURIComponent(server.password)}` : '');
  return `postgresql://${auth}@${server.host}:${server.port}/${encodeURIComponent(database)}`;
}

/** Runs statements, one after the other, on the server's `postgres` database. */
export async function onServer(server: PostgresServer, ...statements: string[]): Promise<void> {
  const client = new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: 'postgres' });
  await client.connect();
  try {
    for (const sql of statements) await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The rows of one query on the server's `postgres` database. */
async function queryServer<T>(server: PostgresServer, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: 'postgres' });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * Closes every connection to `database` from the server's side, as a restart or failover would,
 * and returns once each backend has exited (it tells its client before it does).
 */
export async function terminateConnections(server: PostgresServer, database: string): Promise<void> {
  const terminated = await queryServer<{ pid: number }>(server, 'SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  const pids = terminated.map((row) => row.pid);
  await eventually(async () => (await queryServer(server, 'SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1)', [pids])).length === 0, { what: 'the terminated backends to exit' });
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Creates an empty database with a unique name (for tests of the migrations themselves). */
export async function createEmptyDatabase(server: PostgresServer, prefix = 'svc_empty'): Promise<TestDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await onServer(server, `CREATE DATABASE ${quote(name)}`);
  return { name, url: databaseUrl(server, name), drop: () => onServer(server, `DROP DATABASE IF EXISTS ${quote(name)} WITH (FORCE)`) };
}

/**
 * (Re)creates `svc_template` and applies every migration to it with the service's own runner;
 * returns its name. Run once per test session, before any test database is copied from it.
 */
export async function prepareTemplateDatabase(server: PostgresServer): Promise<string> {
  const client = new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [TEMPLATE_DATABASE]);
    // A database marked as a template cannot be dropped until the mark is removed.
    if (rowCount) await client.query(`ALTER DATABASE ${quote(TEMPLATE_DATABASE)} WITH IS_TEMPLATE false`);
    await client.query(`DROP DATABASE IF EXISTS ${quote(TEMPLATE_DATABASE)} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quote(TEMPLATE_DATABASE)}`);
  } finally {
    await client.end();
  }
  await applyMigrations({ connectionString: databaseUrl(server, TEMPLATE_DATABASE) });
  // Copying fails while anyone is connected to the template; refusing connections keeps stray
  // clients (and autovacuum's) away.
  await onServer(server, `ALTER DATABASE ${quote(TEMPLATE_DATABASE)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  return TEMPLATE_DATABASE;
}

/** Creates a uniquely named database from the migrated template; call `drop()` when the test file is done. */
export async function createTestDatabase(server: PostgresServer, template: string = TEMPLATE_DATABASE): Promise<TestDatabase> {
  const name = `svc_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  for (let attempt = 1; ; attempt++) {
    try {
      await onServer(server, `CREATE DATABASE ${quote(name)} TEMPLATE ${quote(template)}`);
      break;
    } catch (err) {
      // 55006: "source database is being accessed by other users"; a moment later it is free.
      if ((err as { code?: string }).code !== '55006' || attempt === 20) throw err;
      await sleep(50 * attempt);
    }
  }
  return { name, url: databaseUrl(server, name), drop: () => onServer(server, `DROP DATABASE IF EXISTS ${quote(name)} WITH (FORCE)`) };
}
