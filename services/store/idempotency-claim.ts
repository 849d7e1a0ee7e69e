import type { SqlPool } from './hot-sql';

/** What a creation's unexpired idempotency key already names, if anything. */
export type KeptRecord = { id: string; sameRequest: boolean } | null;

/**
 * Inside a creation's transaction: waits for the organization's other creations with the same
 * key (an advisory lock, so of two at once exactly one stores), then answers the record an
 * unexpired key (24 hours) names. An expired key is freed: the old record keeps its row, not
 * the key. Batches and schedules keep their keys on their own rows (runs: idempotency_keys).
 */
export async function claimIdempotencyKey(client: SqlPool, table: 'batches' | 'schedules', orgId: string, idempotency: { key: string; requestHash: string }): Promise<KeptRecord> {
  await client.query('SELECT pg_advisory_xact_lock(hashtext($1::text || $2::text))', [orgId, idempotency.key]);
  const kept = await client.query<{ id: string; request_hash: string; fresh: boolean }>(
    `SELECT id, request_hash, created_at > now() - interval '24 hours' AS fresh FROM ${table} WHERE org_id = $1::uuid AND idempotency_key = $2`,
    [orgId, idempotency.key],
  );
  const found = kept.rows[0];
  if (found?.fresh) return { id: found.id, sameRequest: found.request_hash === idempotency.requestHash };
  if (found) await client.query(`UPDATE ${table} SET idempotency_key = NULL WHERE id = $1::uuid`, [found.id]);
  return null;
}
