import { rawRows, type Db } from './prisma-client';

/** The tables of short-lived rows (an `id` and an `expires_at` column) that are swept as they are used. */
export type ExpiringTable = 'device_authorizations' | 'oauth_authorization_codes';

/**
 * Deletes up to `limit` rows of `table` that expired before `before`, oldest first; returns how
 * many. The limit keeps the request that sweeps them (a new device code, a new authorization
 * code) from paying for a large backlog at once.
 */
export async function deleteExpiredRows(db: Db, table: ExpiringTable, before: Date, limit: number): Promise<number> {
  const rows = await rawRows<{ id: string }>(
    db,
    `DELETE FROM ${table}
      WHERE id IN (SELECT id FROM ${table} WHERE expires_at < $1::timestamptz ORDER BY expires_at LIMIT $2::int)
     RETURNING id`,
    [before, limit],
  );
  return rows.length;
}
