import fs from 'node:fs';
import type { Pool } from 'pg';
import { FAKE_MODEL, type ProviderFake } from './provider-fake';
import { followRun, type ClientRecord } from './run-client';

/**
 * What the worker-fault scenarios (R1 killed workers, R2 stale workers) share: the runs that flow
 * while workers die or freeze, a pool of clients keeping them flowing, and the looks into
 * Postgres, the provider fake and the workers' logs that count what a fault did.
 */

/** The shapes of run that flow: one provider step, two in a chain, local steps only, and both side by side. */
export type RunShape = 'chat' | 'chain' | 'local' | 'mixed';
export const SHAPES: readonly RunShape[] = ['chat', 'chain', 'local', 'mixed'];

/** Provider-backed steps of each shape: each calls the fake at least once when its run completes. */
export const PROVIDER_STEPS: Readonly<Record<RunShape, number>> = { chat: 1, chain: 2, local: 0, mixed: 1 };

/** What local nodes cost a completed step, micro-USD (the checker compares; services/nodes pricing). */
export const LOCAL_PRICES: Readonly<Record<string, number>> = { input: 0, output: 0, const: 0, 'math-add': 1, 'math-multiply': 1, 'text-template': 2 };

const chat = (id: string, prompt: string) => ({ id, uses: 'openai-chat', inputs: { prompt, model: FAKE_MODEL, maxTokens: 50 } });

/** The request body of a run of `shape` tagged `tag` (every provider prompt carries the run's tag, so the fake's bill is the run's). */
export function runBody(shape: RunShape, tag: string, n = 1): { workflow: unknown } {
  const nodes: unknown[] = [];
  if (shape === 'chat') nodes.push(chat('chat', `tag:${tag} say hi`), { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } });
  if (shape === 'chain') {
    // The second prompt waits for the first answer (its usage) and carries the tag itself: a reference must be a whole string.
    nodes.push(
      chat('chat', `tag:${tag} first`),
      { id: 'tpl', uses: 'text-template', inputs: { template: `tag:${tag} second`, values: '${chat.usage}', missing: 'keep' } },
      chat('chat2', '${tpl.text}'),
      { id: 'out', uses: 'output', inputs: { value: '${chat2.text}' } },
    );
  }
  if (shape === 'local' || shape === 'mixed') {
    nodes.push({ id: 'add', uses: 'math-add', inputs: { a: n, b: 1 } }, { id: 'mul', uses: 'math-multiply', inputs: { a: '${add.result}', b: 10 } }, { id: 'sum', uses: 'output', inputs: { value: '${mul.result}' } });
  }
  if (shape === 'mixed') nodes.push(chat('chat', `tag:${tag} beside`), { id: 'out', uses: 'output', inputs: { value: '${chat.text}' } });
  return { workflow: { version: 2, nodes } };
}

export interface FlowClient {
  tag: string;
  shape: RunShape;
  record: ClientRecord;
}

export interface Flow {
  /** Stops starting runs; resolves with every run's client once the runs in flight end. */
  stop(): Promise<FlowClient[]>;
  /** Runs started so far. */
  started(): number;
}

/** `concurrency` clients, each running one run after another (shapes in turn) until stopped: runs flow while faults happen. */
export function startFlow(options: { url: string; token: string; concurrency: number; prefix: string; shapes?: readonly RunShape[]; runDeadlineMs?: number }): Flow {
  const shapes = options.shapes ?? SHAPES;
  const done: FlowClient[] = [];
  let stopping = false;
  let n = 0;
  const client = async (): Promise<void> => {
    while (!stopping) {
      n += 1;
      const tag = `${options.prefix}-${n}`;
      const shape = shapes[n % shapes.length]!;
      const record = await followRun(options.url, options.token, runBody(shape, tag, n), { deadlineMs: options.runDeadlineMs ?? 180_000 });
      done.push({ tag, shape, record });
    }
  };
  const clients = Array.from({ length: options.concurrency }, () => client());
  return {
    async stop() {
      stopping = true;
      await Promise.all(clients);
      return done;
    },
    started: () => n,
  };
}

export interface RunningStep {
  id: string;
  runId: string;
  nodeId: string;
  attempt: number;
  token: string | null;
}

/** The steps running now (a worker holds them, or their job waits to be taken). */
export async function runningSteps(pool: Pool): Promise<RunningStep[]> {
  const { rows } = await pool.query<{ id: string; run_id: string; node_id: string; attempt: number; attempt_token: string | null }>(
    `SELECT id, run_id, node_id, attempt, attempt_token FROM steps WHERE status = 'running'`,
  );
  return rows.map((r) => ({ id: r.id, runId: r.run_id, nodeId: r.node_id, attempt: r.attempt, token: r.attempt_token }));
}

/**
 * Whether a step has been running at least `forMs`, begun after `since` (epoch ms): a worker
 * sleeping in a failpoint holds one (a healthy worker's steps take a fraction of that).
 */
export async function aStepHeldSince(pool: Pool, since: number, forMs: number): Promise<boolean> {
  const { rows } = await pool.query<{ held: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM steps s JOIN runs r ON r.id = s.run_id
        WHERE s.status = 'running' AND COALESCE(s.started_at, r.created_at) >= to_timestamp($1::double precision / 1000)
          AND COALESCE(s.started_at, r.created_at) <= now() - $2::int * interval '1 millisecond') AS held`,
    [since, forMs],
  );
  return rows[0]!.held;
}

/** Of `steps`, those still held by the attempt that held them then: running under the same token. */
export async function stillHeld(pool: Pool, steps: readonly RunningStep[]): Promise<RunningStep[]> {
  if (steps.length === 0) return [];
  const { rows } = await pool.query<{ id: string; attempt_token: string | null; status: string }>(`SELECT id, attempt_token, status FROM steps WHERE id = ANY($1::uuid[])`, [steps.map((s) => s.id)]);
  const now = new Map(rows.map((r) => [r.id, r]));
  return steps.filter((s) => {
    const row = now.get(s.id);
    return row !== undefined && row.status === 'running' && row.attempt_token === s.token;
  });
}

/** Of `steps`, the ones another attempt took over later (their attempt grew), with their run's end. */
export async function takenOver(pool: Pool, steps: readonly RunningStep[]): Promise<{ step: RunningStep; runFinishedAt: number | null }[]> {
  if (steps.length === 0) return [];
  const { rows } = await pool.query<{ id: string; attempt: number; finished_at: Date | null }>(
    `SELECT s.id, s.attempt, r.finished_at FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.id = ANY($1::uuid[])`,
    [steps.map((s) => s.id)],
  );
  const now = new Map(rows.map((r) => [r.id, r]));
  return steps.flatMap((step) => {
    const row = now.get(step.id);
    return row && row.attempt > step.attempt ? [{ step, runFinishedAt: row.finished_at?.getTime() ?? null }] : [];
  });
}

/**
 * Double commits seen in SQL, apart from the checker: a step charged more than once in the
 * ledger (the schema's unique key forbids it: a tripwire), and a local step whose cost is not its
 * price once (a lost local attempt is charged nothing, so two commits would show as twice the price).
 */
export async function doubleCommitsInSql(pool: Pool, runIds: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  const twice = await pool.query<{ step_id: string; kind: string; n: string }>(
    `SELECT step_id, kind, count(*)::text AS n FROM ledger_entries WHERE step_id IS NOT NULL AND run_id = ANY($1::uuid[]) GROUP BY step_id, kind HAVING count(*) > 1`,
    [runIds],
  );
  for (const r of twice.rows) found.push(`step ${r.step_id}: ${r.n} ledger rows of kind ${r.kind}`);
  const local = await pool.query<{ run_id: string; node_id: string; cost: string; uses: string }>(
    `SELECT s.run_id, s.node_id, s.cost_micros::text AS cost, n->>'uses' AS uses
       FROM steps s JOIN runs r ON r.id = s.run_id
       CROSS JOIN LATERAL jsonb_array_elements(r.definition->'nodes') AS n
      WHERE s.run_id = ANY($1::uuid[]) AND n->>'id' = s.node_id AND s.status = 'completed'`,
    [runIds],
  );
  for (const r of local.rows) {
    const price = LOCAL_PRICES[r.uses];
    if (price !== undefined && Number(r.cost) !== price) found.push(`run ${r.run_id} step ${r.node_id} (${r.uses}): cost ${r.cost}, price ${price} micro-USD`);
  }
  return found;
}

/** step.completed events of one node seen more than once by one client (each a double commit the client saw). */
export function repeatedCompletionsSeen(record: ClientRecord): string[] {
  const seen = new Map<string, Set<string>>();
  for (const m of record.messages) {
    if (!m.data.includes('"step.completed"')) continue;
    const nodeId = (JSON.parse(m.data) as { nodeId?: string }).nodeId ?? '?';
    // The same event sent again after a resume carries the same id: the checker counts those; here only a second commit counts.
    const ids = seen.get(nodeId) ?? new Set<string>();
    ids.add(m.id ?? '');
    seen.set(nodeId, ids);
  }
  return [...seen].filter(([, ids]) => ids.size > 1).map(([nodeId, ids]) => `run ${record.runId} step ${nodeId}: step.completed ${ids.size} times`);
}

/** Provider calls beyond the first of each provider-backed step, over the runs of `clients`. */
export function extraProviderCalls(provider: ProviderFake, clients: readonly FlowClient[]): number {
  return clients.reduce((sum, c) => sum + Math.max(0, provider.callsFor(c.tag).length - PROVIDER_STEPS[c.shape]), 0);
}

/** Lines of a worker's log (pino JSON) with this message, optionally of one run. */
export function logLines(logFile: string, msg: string, runId?: string): Record<string, unknown>[] {
  if (!fs.existsSync(logFile)) return [];
  return fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes(msg))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return []; // a line still being written
      }
    })
    .filter((entry) => entry.msg === msg && (runId === undefined || entry.runId === runId));
}

/** The log line a worker writes when its result (commit or failure) is refused because another attempt owns the step. */
export { STALE_RESULT_DROPPED as STALE_COMMIT_DROPPED } from '../../../services/runs/events/run-outbox';
