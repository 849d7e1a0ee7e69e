import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually';
import { readSse } from '../support/sse';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { restartWorker, type ServiceProcess } from './support/service-process';
import { startTopology, type Topology } from './support/topology';
import { FAKE_MODEL } from './support/provider-fake';

/**
 * B1: a priced batch (each row one provider call) while the workers are SIGKILLed in turn every
 * few seconds and started again. The batch's cap is a third of what its rows would cost at their
 * worst case, so it binds: the last rows fail with `spend_cap_exceeded`.
 *
 * Then: the batch ends; every row ended exactly once (one terminal status, one `batch.row` event
 * on the progress stream, at most one run per row: a row is never started twice); the batch's
 * spend never passed its cap and equals what the ledger charged its runs, row by row; nothing is
 * held; the results file lists every row once; the checker's money invariants hold for every run
 * of the batch.
 */

const SCENARIO = 'B1';
const ROWS = scale(200, 5000);
const KILL_EVERY_MS = scale(1500, 3000);
/** Kills at most (make test's short run stops killing after these; the full run kills until the batch ends). */
const MAX_KILLS = scale(5, 10_000);
const CONCURRENCY = scale(20, 50);

let topo: Topology;
beforeAll(async () => {
  topo = await startTopology({ apis: 1, env: { BATCH_FEED_INTERVAL_MS: '100', BATCH_STREAM_POLL_MS: '200' }, creditUsd: '1000' });
  // A call takes a little while, so kills land with calls in flight.
  topo.provider.behave({ delayMs: 200, chunkDelayMs: 50 });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

/** A workflow of one chat call whose prompt carries the row's tag (the fake bills by tag). */
const WORKFLOW = {
  version: 2,
  nodes: [
    { id: 'prompt', uses: 'input', outputType: 'TEXT' },
    { id: 'chat', uses: 'openai-chat', inputs: { prompt: '${prompt.value}', model: FAKE_MODEL, maxTokens: 50 } },
    { id: 'text', uses: 'output', inputs: { value: '${chat.text}' } },
  ],
};

it(`B1: a ${ROWS}-row priced batch under worker SIGKILLs every ${KILL_EVERY_MS} ms: every row ends once, the batch cap holds, the money adds up`, async () => {
  const headers = { Authorization: `Bearer ${topo.account.token}`, 'Content-Type': 'application/json' };
  // The worst case of one row: what each row's cap is set to.
  const estimate = (await (await fetch(`${topo.url}/v1/runs/estimate`, { method: 'POST', headers, body: JSON.stringify({ workflow: WORKFLOW, inputs: { prompt: { value: 'tag:probe hi' } } }) })).json()) as { worstCaseUsd: number };
  // Twice the probe's worst case: a row's prompt is a little longer than the probe's.
  const rowCap = Math.round(estimate.worstCaseUsd * 2 * 1e6) / 1e6;
  expect(rowCap).toBeGreaterThan(0);
  const capUsd = Math.floor(estimate.worstCaseUsd * ROWS * 0.35 * 1e6) / 1e6;
  const startedAt = Date.now();
  const rows = Array.from({ length: ROWS }, (_, i) => ({ prompt: `tag:b1-${i + 1} say hi` }));
  const created = await fetch(`${topo.url}/v1/batches`, { method: 'POST', headers, body: JSON.stringify({ workflow: WORKFLOW, rows, rowMaxCostUsd: rowCap, maxCostUsd: capUsd, concurrency: CONCURRENCY }) });
  const batch = (await created.json()) as { id: string };
  expect(created.status).toBe(201);

  // Its progress stream, followed from the start on the one API (not killed here).
  const stream = fetch(`${topo.url}/v1/batches/${batch.id}/events`, { headers }).then(readSse);

  const { pool } = topo.database;
  const state = async () => (await pool.query<{ status: string; spent: string; held: string; cap: string }>(`SELECT status, spent_micros AS spent, held_micros AS held, cap_micros AS cap FROM batches WHERE id = $1::uuid`, [batch.id])).rows[0]!;
  let kills = 0;
  let overCapSeen = 0;
  // Each victim is started again in the background: the next kill (of the other worker) does not wait for it.
  const restarts = new Map<ServiceProcess, Promise<void>>();
  const deadline = Date.now() + scale(240_000, 1_500_000);
  while ((await state()).status === 'running' && Date.now() < deadline) {
    await sleep(KILL_EVERY_MS);
    const now = await state();
    if (Number(now.spent) + Number(now.held) > Number(now.cap)) overCapSeen += 1;
    if (now.status !== 'running') break;
    if (kills >= MAX_KILLS) continue;
    const victim = topo.workers[kills % topo.workers.length]!;
    await restarts.get(victim);
    victim.signal('SIGKILL');
    await victim.exited();
    kills += 1;
    restarts.set(victim, restartWorker(victim));
  }
  await Promise.all(restarts.values());
  const end = await eventually(async () => {
    const now = await state();
    return now.status === 'completed' ? now : null;
  }, { timeoutMs: 180_000, intervalMs: 500, what: 'the batch to end' });

  const { rows: stored } = await pool.query<{ row: number; status: string; attempts: number; run_id: string | null; cost: string; ended_seq: number | null; code: string | null }>(
    `SELECT row, status, attempts, run_id, cost_micros AS cost, ended_seq, error->>'code' AS code FROM batch_rows WHERE batch_id = $1::uuid ORDER BY row`,
    [batch.id],
  );
  const notEnded = stored.filter((r) => !['completed', 'failed', 'cancelled'].includes(r.status)).length;
  const startedTwice = stored.filter((r) => r.attempts > 1).length;
  const { rows: runsPerRow } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM runs WHERE batch_id = $1::uuid`, [batch.id]);
  const started = stored.filter((r) => r.run_id !== null).length;
  const { rows: charged } = await pool.query<{ run_id: string; charged: string }>(
    `SELECT r.id AS run_id, COALESCE(-sum(l.amount_micros), 0) AS charged FROM runs r LEFT JOIN ledger_entries l ON l.run_id = r.id WHERE r.batch_id = $1::uuid GROUP BY r.id`,
    [batch.id],
  );
  const chargedByRun = new Map(charged.map((c) => [c.run_id, Number(c.charged)]));
  const rowCostMismatches = stored.filter((r) => r.run_id !== null && Number(r.cost) !== chargedByRun.get(r.run_id)).length;
  const ledgerTotal = [...chargedByRun.values()].reduce((a, b) => a + b, 0);

  // The stream: one batch.row per row, then batch.ended.
  const messages = await stream;
  const events = messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as { type: string; row?: number });
  const perRow = new Map<number, number>();
  for (const e of events) if (e.type === 'batch.row') perRow.set(e.row!, (perRow.get(e.row!) ?? 0) + 1);
  const streamMissing = ROWS - perRow.size;
  const streamTwice = [...perRow.values()].filter((n) => n > 1).length;

  // The results file: every row once.
  const link = (await (await fetch(`${topo.url}/v1/batches/${batch.id}/results`, { headers })).json()) as { url: string };
  const lines = (await (await fetch(link.url)).text()).trim().split('\n').map((line) => JSON.parse(line) as { row: number });
  const listed = new Set(lines.map((l) => l.row));

  const runIds = stored.map((r) => r.run_id).filter((id): id is string => id !== null);
  const check = await checkInvariants({ pool, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients: [], runIds, settleMs: 30_000 });
  const counts = { completed: stored.filter((r) => r.status === 'completed').length, failed: stored.filter((r) => r.status === 'failed').length };
  const codes: Record<string, number> = {};
  for (const r of stored) if (r.code) codes[r.code] = (codes[r.code] ?? 0) + 1;
  console.log(`${SCENARIO}:`, { seconds: Math.round((Date.now() - startedAt) / 1000), kills, codes, rowCap, capUsd, spent: end.spent, held: end.held, started, runs: runsPerRow[0]!.n, ...counts, violations: check.violations.slice(0, 5) });

  figure(SCENARIO, 'rows in the batch', ROWS, undefined, 'rows');
  figure(SCENARIO, 'worker SIGKILLs while it ran', kills, undefined, 'kills');
  figure(SCENARIO, 'rows completed (the rest failed at the batch cap)', counts.completed, undefined, 'rows');
  expectFigure(SCENARIO, 'kills that landed while the batch ran', kills, { min: 2 }, 'kills');
  expectFigure(SCENARIO, 'rows not ended', notEnded, { equals: 0 }, 'rows');
  expectFigure(SCENARIO, 'rows started more than once', startedTwice, { equals: 0 }, 'rows');
  expectFigure(SCENARIO, 'runs beyond one per started row', Number(runsPerRow[0]!.n) - started, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'batch spend over its cap (micro-USD)', Math.max(0, Number(end.spent) - Number(end.cap)), { equals: 0 }, 'micro-USD');
  expectFigure(SCENARIO, 'times spent + held was seen over the cap', overCapSeen, { equals: 0 });
  expectFigure(SCENARIO, 'held after the end (micro-USD)', Number(end.held), { equals: 0 }, 'micro-USD');
  expectFigure(SCENARIO, 'batch spend minus the ledger charges of its runs (micro-USD)', Number(end.spent) - ledgerTotal, { equals: 0 }, 'micro-USD');
  expectFigure(SCENARIO, "rows whose cost is not their run's ledger charge", rowCostMismatches, { equals: 0 }, 'rows');
  expectFigure(SCENARIO, 'rows without their batch.row event, or with two', streamMissing + streamTwice, { equals: 0 }, 'rows');
  expectFigure(SCENARIO, 'results file: rows missing or listed twice', ROWS - listed.size + (lines.length - listed.size), { equals: 0 }, 'rows');
  expect(events.at(-1)?.type).toBe('batch.ended');
  expect(counts.failed).toBeGreaterThan(0);
  expectFigure(SCENARIO, 'rows completed', counts.completed, { min: Math.floor(ROWS / 4) }, 'rows');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
}, scale(400_000, 1_800_000));
