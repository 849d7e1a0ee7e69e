import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory, type SqlDriverAdapter, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { SchemaContainer, SchemaEngine } from '@prisma/schema-engine-wasm' with { 'resolution-mode': 'import' };
import type * as EngineBindings from '@prisma/schema-engine-wasm/schema_engine_bg' with { 'resolution-mode': 'import' };
import pg from 'pg';
import type { PgServer } from './pg-server';

/**
 * Prisma's schema engine, offline: the wasm build (`@prisma/schema-engine-wasm`) driven through
 * `@prisma/adapter-pg`, because `prisma migrate` wants a native engine it downloads on first use.
 * Dev tools only; the service applies migrations with services/store/migration-runner.ts.
 */

type EngineModule = typeof EngineBindings;

// Node has WebAssembly; our `lib` (ES2023, no DOM) does not declare it.
declare const WebAssembly: {
  instantiate(bytes: Uint8Array, imports: Record<string, Record<string, unknown>>): Promise<{ instance: { exports: Record<string, unknown> } }>;
};

let engineModule: Promise<EngineModule> | undefined;

// The package's entry imports the .wasm file as an ES module, which Node cannot do; instantiate
// the wasm ourselves with the package's generated bindings as its import object instead.
async function loadEngineModule(): Promise<EngineModule> {
  const bindings = await import('@prisma/schema-engine-wasm/schema_engine_bg');
  const wasmPath = path.join(path.dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')), 'schema_engine_bg.wasm');
  const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
    './schema_engine_bg.js': bindings as unknown as Record<string, unknown>,
  });
  bindings.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
  return bindings;
}

const NAME_OID = 19;
const CHAR_OID = 18;
const TEXT_OID = 25;

interface RowDescription {
  fields: { dataTypeID: number }[];
}

/**
 * The engine reads Postgres catalog columns of types `name` and `"char"`, which the pg adapter
 * cannot decode (prisma/prisma#27403); both arrive as plain text, so relabel them as `text` before
 * pg builds the result. Our own tables never use those types.
 */
class CatalogTextClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const connection = (this as unknown as { connection: NodeJS.EventEmitter }).connection;
    connection.prependListener('rowDescription', (message: RowDescription) => {
      for (const field of message.fields) {
        if (field.dataTypeID === NAME_OID || field.dataTypeID === CHAR_OID) field.dataTypeID = TEXT_OID;
      }
    });
  }
}

function poolConfig(server: PgServer, database: string): pg.PoolConfig {
  return { host: server.host, port: server.port, user: server.user, password: server.password, database, Client: CatalogTextClient, max: 2 };
}

/** Runs one statement on the server's maintenance database (CREATE/DROP DATABASE cannot run in a pool transaction). */
export async function onServer(server: PgServer, sql: string): Promise<void> {
  const client = new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: server.database });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * The adapter's own shadow database handling drops the database while its pool is still open,
 * which Postgres refuses; this one closes the pool first and then drops with FORCE.
 */
class ManagedShadowFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = 'postgres' as const;
  readonly adapterName: string;
  private readonly main: PrismaPg;

  constructor(private readonly server: PgServer) {
    this.main = new PrismaPg(poolConfig(server, server.database));
    this.adapterName = this.main.adapterName;
  }

  connect(): Promise<SqlDriverAdapter> {
    return this.main.connect();
  }

  async connectToShadowDb(): Promise<SqlDriverAdapter> {
    const name = `svc_shadow_${randomUUID().replace(/-/g, '')}`;
    await onServer(this.server, `CREATE DATABASE "${name}"`);
    const adapter = await new PrismaPg(poolConfig(this.server, name)).connect();
    const dispose = adapter.dispose.bind(adapter);
    adapter.dispose = async () => {
      await dispose();
      await onServer(this.server, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    };
    return adapter;
  }
}

/** An engine bound to one database of a server, with the schema files it was opened with. */
export interface OpenEngine {
  engine: SchemaEngine;
  schemaFiles: SchemaContainer[];
  close(): void;
}

/** Reads the schema and opens the wasm engine against `server.database`. */
export async function openSchemaEngine(options: { server: PgServer; schemaPath: string; log?: (line: string) => void }): Promise<OpenEngine> {
  engineModule ??= loadEngineModule();
  const { SchemaEngine: Engine } = await engineModule;
  const schemaFiles = [{ path: options.schemaPath, content: await readFile(options.schemaPath, 'utf8') }];
  const log = options.log ?? (() => undefined);
  const engine = await Engine.new(
    { datamodels: schemaFiles.map((f) => [f.path, f.content] as [string, string]) },
    (line: string) => log(line),
    bindMigrationAwareSqlAdapterFactory(new ManagedShadowFactory(options.server)),
  );
  return { engine, schemaFiles, close: () => engine.free() };
}

/** No tables or enums are managed outside the schema. */
export const NO_FILTERS = { externalTables: [], externalEnums: [] };
