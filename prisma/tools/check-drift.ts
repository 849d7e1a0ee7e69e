/**
 * Compares a live database with `prisma/schema.prisma` (the wasm schema engine's diff, offline) and
 * prints the SQL that would turn the database into the schema. Use it after `make migrate` to
 * prove the migrations and the schema agree, or to see what a hand-edited database lacks.
 *
 *   npx tsx prisma/tools/check-drift.ts --url postgresql://postgres@127.0.0.1:5432/svc
 *
 * Options: --schema <file> (default prisma/schema.prisma).
 * Exit codes: 0 no drift, 2 drift (the SQL is on stdout), 1 failure.
 */
import path from 'node:path';
import { parseArgs, resolvePgServer } from './pg-server';
import { NO_FILTERS, openSchemaEngine } from './schema-engine';

const ROOT = path.resolve(__dirname, '..', '..');

async function main(): Promise<number> {
  const { flags } = parseArgs(process.argv.slice(2));
  const server = resolvePgServer(flags);
  const schemaPath = path.resolve(flags.get('schema') ?? path.join(ROOT, 'prisma', 'schema.prisma'));
  const { engine, schemaFiles, close } = await openSchemaEngine({ server, schemaPath });
  try {
    // `schemaDatasource` means "the database the datasource points at": with a driver adapter that
    // is the adapter's connection, to `server.database`. (The `url` target is refused by the engine.)
    const result = await engine.diff({
      from: { tag: 'schemaDatasource', files: schemaFiles, configDir: ROOT },
      to: { tag: 'schemaDatamodel', files: schemaFiles },
      script: true,
      exitCode: true,
      filters: NO_FILTERS,
    });
    if (result.exitCode === 0) {
      console.log(`no drift: database ${server.database} matches ${path.relative(ROOT, schemaPath)}`);
      return 0;
    }
    process.stdout.write(result.stdout ?? '');
    console.error(`drift: database ${server.database} differs from ${path.relative(ROOT, schemaPath)}; the SQL above would reconcile it`);
    return 2;
  } finally {
    close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
