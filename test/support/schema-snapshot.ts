import pg from 'pg';

/**
 * What a migrated database is made of, as comparable data: the public schema's columns, indexes,
 * constraints, triggers and functions (with their definitions). Two databases with equal
 * snapshots have the same schema and the same functions, whatever history led there.
 */
export interface SchemaSnapshot {
  columns: string[];
  indexes: string[];
  constraints: string[];
  triggers: string[];
  functions: string[];
}

const QUERIES: Record<keyof SchemaSnapshot, string> = {
  columns: `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '') AS item
              FROM information_schema.columns WHERE table_schema = 'public'`,
  indexes: `SELECT indexdef AS item FROM pg_indexes WHERE schemaname = 'public'`,
  constraints: `SELECT c.conrelid::regclass || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid) AS item
                  FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = 'public'`,
  triggers: `SELECT pg_get_triggerdef(t.oid) AS item FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND NOT t.tgisinternal`,
  functions: `SELECT pg_get_functiondef(p.oid) AS item FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
};

/** The snapshot of the database at `url`, each list sorted. */
export async function schemaSnapshot(url: string): Promise<SchemaSnapshot> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const snapshot = {} as SchemaSnapshot;
    for (const [key, sql] of Object.entries(QUERIES) as [keyof SchemaSnapshot, string][]) {
      snapshot[key] = (await client.query<{ item: string }>(sql)).rows.map((row) => row.item).sort();
    }
    return snapshot;
  } finally {
    await client.end();
  }
}
