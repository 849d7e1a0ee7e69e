import type { Database } from './database';
import { queryRows, type SqlPool } from './hot-sql';
import { microsFromDb } from './micros';

/** Recent completed runs of an organization that a node's median cost is taken over. */
export const COST_HISTORY_RUNS = 500;

/**
 * What a cost estimate reads (docs/runs.md, Cost estimates): an organization's past costs by node
 * spec, and what it may still spend. Reads only; one statement each.
 */
export class RunCosts {
  private readonly pool: SqlPool;

  constructor(database: Pick<Database, 'pool'>) {
    this.pool = database.pool;
  }

  /**
   * The median cost of the completed steps of each node spec in `uses`, over the organization's
   * last {@link COST_HISTORY_RUNS} completed runs (the newest first, by the index on
   * (org_id, created_at)); a spec without any is absent.
   */
  async medianCosts(orgId: string, uses: readonly string[]): Promise<Map<string, { medianMicros: number; samples: number }>> {
    if (uses.length === 0) return new Map();
    const rows = await queryRows<{ uses: string; median: string; samples: number }>(
      this.pool,
      `SELECT n.uses, percentile_disc(0.5) WITHIN GROUP (ORDER BY s.cost_micros)::text AS median, count(*)::int AS samples
         FROM (SELECT id, definition FROM runs WHERE org_id = $1::uuid AND status = 'completed' ORDER BY created_at DESC LIMIT ${COST_HISTORY_RUNS}) r
         JOIN steps s ON s.run_id = r.id AND s.status = 'completed'
         CROSS JOIN LATERAL jsonb_to_recordset(r.definition->'nodes') AS n(id text, uses text)
        WHERE n.id = s.node_id AND n.uses = ANY($2::text[])
        GROUP BY n.uses`,
      [orgId, uses],
    );
    return new Map(rows.map((row) => [row.uses, { medianMicros: microsFromDb(row.median), samples: row.samples }]));
  }

  /** What the organization may still spend: its balance less what its unfinished runs hold (docs/money.md, Holds). */
  async availableMicros(orgId: string): Promise<number> {
    const [row] = await queryRows<{ available: string }>(this.pool, `SELECT (balance_micros - held_micros)::text AS available FROM organizations WHERE id = $1::uuid`, [orgId]);
    return row ? microsFromDb(row.available) : 0;
  }
}
