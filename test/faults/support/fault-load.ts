import { Redis } from 'ioredis';
import { eventually } from '../../support/eventually';
import { checkInvariants } from './checker';
import { streamViolations } from './checker-streams';
import { figure, type Goal } from './figures';
import { FAKE_MODEL } from './provider-fake';
import { followRun, type ClientRecord } from './run-client';
import { startTopology, type Topology, type TopologyOptions } from './topology';

/**
 * Load for the infrastructure scenarios (R3, R6): runs that stay in flight for seconds (a chain
 * of provider steps, each held by the fake's delay), followed by clients that resume after any
 * cut, and the figures every such scenario reports the same way.
 */

/** A run of `steps` provider calls in a chain (each waits for the one before), tagged for the checker. */
export function chainRun(tag: string, steps: number): unknown {
  const nodes: unknown[] = [{ id: 's1', uses: 'openai-chat', inputs: { prompt: `tag:${tag} step 1`, model: FAKE_MODEL, maxTokens: 50 } }];
  for (let i = 2; i <= steps; i += 1) {
    nodes.push({ id: `s${i}`, uses: 'openai-chat', inputs: { prompt: `tag:${tag} step ${i} after \${s${i - 1}.text}`, model: FAKE_MODEL, maxTokens: 50 } });
  }
  nodes.push({ id: 'out', uses: 'output', inputs: { value: `\${s${steps}.text}` } });
  return { workflow: { version: 2, nodes }, maxCostUsd: 0.5 };
}

export interface Batch {
  tags: string[];
  /** Resolves once every client has reached [DONE] or given up. */
  done: Promise<ClientRecord[]>;
  /** The records as they fill (the same objects `done` resolves to, once each client has returned). */
  records: (ClientRecord | undefined)[];
  /** Run ids the clients have seen start (a run id to resume with), in no particular order. */
  runIds: string[];
}

/** Starts `count` runs at once through the load balancer, each followed to [DONE] by a resuming client. */
export function startBatch(topo: Topology, name: string, count: number, options: { steps: number; deadlineMs: number }): Batch {
  const tags = Array.from({ length: count }, (_, i) => `${name}-${i}`);
  const records: (ClientRecord | undefined)[] = tags.map(() => undefined);
  const runIds: string[] = [];
  const done = Promise.all(
    tags.map(async (tag, i) => {
      const record = await followRun(topo.url, topo.account.token, chainRun(tag, options.steps), {
        deadlineMs: options.deadlineMs,
        heartbeatMs: Number(topo.env.SSE_HEARTBEAT_MS),
        onEvent: (m) => {
          if (m.data.includes('"run.started"')) runIds.push((JSON.parse(m.data) as { runId: string }).runId);
        },
      });
      records[i] = record;
      return record;
    }),
  );
  return { tags, done, records, runIds };
}

/**
 * Keeps `size` clients busy, each starting its next run (tagged `<name>-<client>-<n>`) as soon as
 * the last one ended, until `stop()` says so; resolves to every client record.
 */
export async function runPool(topo: Topology, name: string, size: number, options: { steps: number; deadlineMs: number; stop: () => boolean }): Promise<ClientRecord[]> {
  const records: ClientRecord[] = [];
  await Promise.all(
    Array.from({ length: size }, async (_, client) => {
      for (let n = 0; !options.stop(); n += 1) {
        records.push(await followRun(topo.url, topo.account.token, chainRun(`${name}-${client}-${n}`, options.steps), { deadlineMs: options.deadlineMs, heartbeatMs: Number(topo.env.SSE_HEARTBEAT_MS) }));
      }
    }),
  );
  return records;
}

/** Waits until the provider has been called `calls` times for the batch: its runs are in flight. */
export async function untilInFlight(topo: Topology, batch: Batch, calls: number): Promise<void> {
  const tags = new Set(batch.tags);
  await eventually(() => topo.provider.calls.filter((c) => c.tag !== null && tags.has(c.tag)).length >= calls, { timeoutMs: 60_000, intervalMs: 20, what: `${calls} provider calls of batch ${batch.tags[0]}…` });
}

/** Redis's clock in ms (`TIME`), read directly: the clock the service's leases and locks use. */
export async function redisNow(redisUrl: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  } finally {
    redis.disconnect();
  }
}

export interface StreamTally {
  /** Clients whose stream ended with exactly one terminal event, then [DONE], gap-free and without duplicates. */
  whole: number;
  /** Clients that needed at least one resume. */
  resumed: number;
  gaveUp: number;
  /** The first few problems, for the failure message. */
  problems: string[];
}

export function tallyStreams(records: readonly ClientRecord[]): StreamTally {
  const problems: string[] = [];
  let whole = 0;
  for (const [i, record] of records.entries()) {
    const found = streamViolations(`client ${i} (run ${record.runId ?? 'unknown'})`, record.messages);
    if (record.gaveUp) found.unshift(`client ${i} (run ${record.runId ?? 'unknown'}) gave up: ${record.gaveUp}`);
    if (found.length === 0) whole += 1;
    else problems.push(...found);
  }
  return { whole, resumed: records.filter((r) => r.resumes > 0).length, gaveUp: records.filter((r) => r.gaveUp !== undefined).length, problems: problems.slice(0, 10) };
}

/** Runs of `runIds` that are terminal in Postgres, and when the last of them finished (ms since the epoch). */
export async function terminalRuns(topo: Topology, runIds: readonly string[]): Promise<{ terminal: number; failed: number; lastFinishedAt: number }> {
  const { rows } = await topo.database.pool.query<{ status: string; finished: Date | null }>(`SELECT status, finished_at AS finished FROM runs WHERE id::text = ANY($1::text[])`, [runIds]);
  const terminal = rows.filter((r) => ['completed', 'failed', 'cancelled'].includes(r.status));
  return {
    terminal: terminal.length,
    failed: rows.filter((r) => r.status !== 'completed').length,
    lastFinishedAt: Math.max(0, ...terminal.map((r) => r.finished?.getTime() ?? 0)),
  };
}

/** The runs of `runIds` not ended, each with its steps (status, attempt, times): what a scenario prints when a run does not end. */
export async function unfinishedRuns(topo: Topology, runIds: readonly string[]): Promise<unknown[]> {
  const { rows } = await topo.database.pool.query(
    `SELECT r.id, r.status, json_agg(json_build_object('node', s.node_id, 'status', s.status, 'attempt', s.attempt, 'deps', s.pending_deps, 'started', s.started_at, 'finished', s.finished_at) ORDER BY s.node_id) AS steps
       FROM runs r JOIN steps s ON s.run_id = r.id
      WHERE r.id::text = ANY($1::text[]) AND r.status NOT IN ('completed', 'failed', 'cancelled')
      GROUP BY r.id, r.status`,
    [runIds],
  );
  return rows;
}

/**
 * The figures every scenario of runs under a fault reports: runs terminal n/n, streams whole n/n
 * (and how many needed a resume), and the checker's violations. Returns the goals missed, each
 * with the evidence, for the caller to throw once it has recorded its own figures too.
 */
export async function reportRuns(topo: Topology, scenario: string, label: string, records: readonly ClientRecord[], extra: readonly ClientRecord[] = []): Promise<{ lastFinishedAt: number; misses: string[] }> {
  const n = records.length;
  const runIds = records.map((r) => r.runId).filter((id): id is string => id !== undefined);
  const result = await checkInvariants({ pool: topo.database.pool, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients: [...records, ...extra], settleMs: 30_000 });
  const runs = await terminalRuns(topo, runIds);
  const streams = tallyStreams(records);
  const misses: string[] = [];
  const check = (name: string, value: number | string, goal: Goal | undefined): void => {
    if (!figure(scenario, `${label}: ${name}`, value, goal)) misses.push(`${name} = ${value} (goal ${JSON.stringify(goal)})`);
  };
  check('runs terminal', `${runs.terminal}/${n}`, { equals: `${n}/${n}` });
  check('runs failed', runs.failed, undefined);
  check('streams ending with their terminal event then [DONE]', `${streams.whole}/${n}`, { equals: `${n}/${n}` });
  check('streams that needed a resume', streams.resumed, undefined);
  check('checker violations', result.violations.length, { max: 0 });
  if (misses.length > 0) misses.push(`streams: ${streams.problems.join('\n')}`, `checker: ${result.violations.slice(0, 15).join('\n')}`);
  return { lastFinishedAt: runs.lastFinishedAt, misses };
}

/**
 * Starts the topology, trying again when a process was not ready in time: on a machine shared
 * with other test runs, four service processes loading at once can miss the topology's
 * readiness limit without anything being wrong with them.
 */
export async function startTopologyPatiently(options: TopologyOptions = {}, attempts = 3): Promise<Topology> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startTopology(options);
    } catch (err) {
      if (attempt >= attempts || !/to be ready/.test((err as Error).message)) throw err;
      console.warn(`topology start ${attempt} of ${attempts} failed, trying again: ${(err as Error).message}`);
    }
  }
}
