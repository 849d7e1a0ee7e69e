import pg from 'pg';
import { sampleUntilStopped } from '../../faults/support/sampler';

/** How often the sampler looks: often enough for a few hundred samples in a measured phase. */
const PERIOD_MS = 50;

/**
 * What the database's busy connections are waiting for, sampled every 50 ms over a phase: the
 * profile evidence beside a throughput figure (a lock wait on one row, WAL fsyncs, or nothing:
 * then the time is CPU). Each sample counts the active backends of the connection string's database by wait event (with
 * the table of a row lock waited for) and statement; `stop()` answers the most frequent, as "share% event statement" lines.
 */
export function sampleWaits(connectionString: string): { stop(): Promise<string[]> } {
  const pool = new pg.Pool({ connectionString, max: 1 });
  pool.on('error', () => undefined);
  const sampler = sampleUntilStopped(async () => {
    const { rows } = await pool.query<{ wait: string; statement: string }>(
      `SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU (no wait event)')
                || COALESCE(' on ' || (SELECT l.relation::regclass::text FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted AND l.relation IS NOT NULL LIMIT 1), '') AS wait,
              COALESCE(substring(query from 'svc_[a-z_]+|pg_logical_emit_message'), left(regexp_replace(query, '\\s+', ' ', 'g'), 48)) AS statement
         FROM pg_stat_activity a
        WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    return rows;
  }, PERIOD_MS);
  return {
    async stop() {
      try {
        const samples = await sampler.stop();
        const counts = new Map<string, number>();
        let total = 0;
        for (const row of samples.flat()) {
          const key = `${row.wait} ${row.statement}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
          total++;
        }
        // Heavyweight locks (a row's tuple, another transaction's end): the waits on a hot row, whatever their rank.
        const locked = [...counts].filter(([key]) => key.startsWith('Lock:')).reduce((sum, [, n]) => sum + n, 0);
        const busy = `${samples.length} samples, ${(total / Math.max(1, samples.length)).toFixed(1)} active backends on average, ${((100 * locked) / Math.max(1, total)).toFixed(1)}% waiting for a lock`;
        const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 6);
        return [busy, ...top.map(([key, n]) => `${((100 * n) / total).toFixed(0).padStart(3)}% ${key}`)];
      } finally {
        await pool.end();
      }
    },
  };
}

/**
 * How many multixacts the database made from this call to `stop()`: Postgres makes one each
 * time a row is locked by a second transaction at once (a foreign-key check's FOR KEY SHARE beside
 * another's lock or update of the same row), and every later lock of that row reads the multixact
 * SLRU (the `LWLock:MultiXact*` waits above). The counter is read from the control file, which a
 * checkpoint brings up to date, so each end runs one (outside the measured phase).
 */
export async function countMultixacts(connectionString: string): Promise<{ stop(): Promise<number> }> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  const read = async (): Promise<number> => {
    await client.query('CHECKPOINT');
    const { rows } = await client.query<{ next: string }>('SELECT next_multixact_id::text AS next FROM pg_control_checkpoint()');
    return Number(rows[0]!.next);
  };
  const first = await read();
  return {
    async stop() {
      try {
        return (await read()) - first;
      } finally {
        await client.end();
      }
    },
  };
}
