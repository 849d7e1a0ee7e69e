import type { Database } from './database';
import { queryRows } from './hot-sql';
import { isUuid } from './run-records';

/** An output cache entry to store (docs/runs.md, Output caching). */
export interface NewOutputCacheEntry {
  orgId: string;
  key: string;
  node: string;
  outputs: Record<string, unknown>;
  /** The run whose step computed the outputs: the entry is deleted with it. */
  runId: string;
  expiresAt: Date;
  /** Most entries the organization keeps; its least recently used others are evicted beyond it. */
  maxEntries: number;
}

/**
 * The output cache's entries in Postgres (`output_cache_entries`): one per organization and key,
 * so one organization never reads another's. Each statement is one round trip on the pool.
 */
export class OutputCacheRepository {
  constructor(private readonly database: Pick<Database, 'pool'>) {}

  /** The outputs of the organization's unexpired entry under `key`, its last use set to now; null when there is none. */
  async get(orgId: string, key: string): Promise<Record<string, unknown> | null> {
    if (!isUuid(orgId)) return null;
    const rows = await queryRows<{ outputs: Record<string, unknown> }>(
      this.database.pool,
      `UPDATE output_cache_entries SET last_used_at = now()
       WHERE org_id = $1::uuid AND key = $2 AND expires_at > now()
       RETURNING outputs`,
      [orgId, key],
    );
    return rows[0]?.outputs ?? null;
  }

  /**
   * Stores the entry (replacing one under the same key) and, in the same statement, evicts the
   * organization's least recently used entries beyond `maxEntries` (an expired entry is no longer
   * used, so it ages out first). The bound holds per statement: two stores at once may each keep
   * `maxEntries - 1` others, leaving one entry over until the next store. Answers how many it evicted.
   */
  async put(entry: NewOutputCacheEntry): Promise<{ evicted: number }> {
    if (!Number.isSafeInteger(entry.maxEntries) || entry.maxEntries < 1) throw new RangeError(`put: maxEntries must be a positive whole number, got ${entry.maxEntries}`);
    const outputs = JSON.stringify(entry.outputs);
    const rows = await queryRows<{ evicted: number }>(
      this.database.pool,
      `WITH stored AS (
         INSERT INTO output_cache_entries (org_id, key, node, outputs, bytes, run_id, expires_at)
         VALUES ($1::uuid, $2, $3, $4::jsonb, $5, $6::uuid, $7::timestamptz)
         ON CONFLICT (org_id, key) DO UPDATE
           SET node = EXCLUDED.node, outputs = EXCLUDED.outputs, bytes = EXCLUDED.bytes, run_id = EXCLUDED.run_id,
               created_at = now(), last_used_at = now(), expires_at = EXCLUDED.expires_at
         RETURNING key
       ), evicted AS (
         DELETE FROM output_cache_entries
         WHERE org_id = $1::uuid AND key IN (
           SELECT key FROM output_cache_entries WHERE org_id = $1::uuid AND key <> $2
           ORDER BY last_used_at DESC, key OFFSET $8::int - 1)
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM evicted)::int AS evicted, (SELECT count(*) FROM stored)::int AS stored`,
      [entry.orgId, entry.key, entry.node, outputs, Buffer.byteLength(outputs), entry.runId, entry.expiresAt, entry.maxEntries],
    );
    return { evicted: rows[0]?.evicted ?? 0 };
  }
}
