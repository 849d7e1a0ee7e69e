import fs from 'node:fs';
import path from 'node:path';
import { eventually } from '../../support/eventually';
import { checkInvariants } from '../support/checker';
import { startTopologyPatiently } from '../support/fault-load';
import { expectFigure, figure, FIGURES_FILE, scale } from '../support/figures';
import { FAKE_MODEL } from '../support/provider-fake';
import { followRun, type ClientRecord } from '../support/run-client';
import type { Topology } from '../support/topology';
import { LOCAL_PRICES, logLines, STALE_COMMIT_DROPPED, startFlow } from '../support/worker-faults';

/**
 * R2: a worker frozen (SIGSTOP) in the middle of a step for longer than its job lock, so BullMQ
 * hands the job to the other worker, which takes the step over and commits it; then the frozen
 * worker is woken (SIGCONT) and goes on to commit its stale attempt. That commit must be refused
 * (the step's attempt token moved on), which the worker logs as STALE_COMMIT_DROPPED for the run.
 *
 * The target step is the `stale` node of a run of its own; both workers pause at it in a
 * failpoint (1 s) so the freeze lands at a chosen place: after the reservation with nothing
 * called (the stale attempt calls the provider when it wakes), or after the provider answered
 * and billed (it wakes straight into its commit). While the target run is started, the other
 * worker is frozen for a moment so that the holder is known; background runs flow throughout.
 *
 * Money: the stale attempt's provider call was made and billed, so it must be paid exactly once
 * (or, when the provider closed the frozen worker's kept-alive connection, it fails unsent, and
 * its failure is refused as its commit would be).
 * The money rules (docs/money.md, prisma/functions/step-reserve.sql) charge it when the step is
 * taken over, at its lost charge (the step's worst-case estimate: the service cannot know then
 * whether the frozen call was made); the refused commit charges nothing more. So per target run
 * the ledger must be: the committed attempt's bill + one lost charge per taken-over attempt, and
 * the "ledger difference" is the ledger less that. What the rules charge above the fake's bill
 * (estimate − actual of each stale call) is reported apart.
 */

const FREEZES = scale(3, 50);
/** Short locks: a frozen worker's job comes back within ~1.5 locks. */
const LOCK_MS = 2000;
const POINTS = ['beforeSettle', 'afterReserve'] as const;

let topo: Topology;
beforeAll(async () => {
  topo = await startTopologyPatiently({ env: { STEP_LOCK_MS: String(LOCK_MS) }, workerEnv: { SVC_FAILPOINTS: 'step.afterReserve:stale=sleep(1000);step.beforeSettle:stale=sleep(1000)' } });
  topo.provider.behave({ delayMs: 50, chunkDelayMs: 20 });
}, 400_000);
afterAll(async () => {
  for (const w of topo?.workers ?? []) w.signal('SIGCONT');
  await topo?.close();
}, 60_000);

const staleBody = (tag: string) => ({
  workflow: { version: 2, nodes: [{ id: 'stale', uses: 'openai-chat', inputs: { prompt: `tag:${tag} frozen`, model: FAKE_MODEL, maxTokens: 50 } }, { id: 'out', uses: 'output', inputs: { value: '${stale.text}' } }] },
});

/** Every line both workers logged about a freeze whose refused commit was not logged, for reading afterwards. */
function saveWorkerLogs(tag: string, runId: string, workers: { name: string; logFile: string }[]): void {
  const lines = workers.flatMap((w) => fs.readFileSync(w.logFile, 'utf8').split('\n').filter((l) => l.includes(runId)).map((l) => `${w.name} ${l}`));
  fs.mkdirSync(path.dirname(FIGURES_FILE), { recursive: true });
  fs.writeFileSync(path.join(path.dirname(FIGURES_FILE), `r2-${tag}-${runId}.log`), lines.join('\n') + '\n');
}

interface Freeze {
  tag: string;
  runId: string;
  point: (typeof POINTS)[number];
  rejected: boolean;
  record: ClientRecord;
}

async function staleStep(runId: string): Promise<{ status: string; attempt: number; started: boolean; cost: number }> {
  const { rows } = await topo.database.pool.query<{ status: string; attempt: number; started: boolean; cost: string }>(
    `SELECT status, attempt, started_at IS NOT NULL AS started, cost_micros::text AS cost FROM steps WHERE run_id = $1::uuid AND node_id = 'stale'`,
    [runId],
  );
  const row = rows[0];
  return row ? { ...row, cost: Number(row.cost) } : { status: 'none', attempt: 0, started: false, cost: 0 };
}

it(`R2: ${FREEZES} stale workers woken after a takeover have their commits refused, and the ledger pays each provider call once`, async () => {
  const pool = topo.database.pool;
  const flow = startFlow({ url: topo.url, token: topo.account.token, concurrency: 2, prefix: 'r2-bg', shapes: ['chat', 'local'] });
  const freezes: Freeze[] = [];
  for (let i = 0; i < FREEZES; i += 1) {
    const holder = topo.workers[i % 2]!;
    const rescuer = topo.workers[(i + 1) % 2]!;
    const point = POINTS[Math.floor(i / 2) % 2]!;
    const tag = `r2-${i}`;
    // Only the holder can take the target's job while the rescuer is frozen (briefly: less than a lock).
    rescuer.signal('SIGSTOP');
    let runId: string | undefined;
    let stepStarted = false;
    const client = followRun(topo.url, topo.account.token, staleBody(tag), {
      deadlineMs: 120_000,
      onEvent: (m) => {
        if (m.data.includes('"run.started"')) runId = (JSON.parse(m.data) as { runId: string }).runId;
        if (m.data.includes('"step.started"') && m.data.includes('"nodeId":"stale"')) stepStarted = true;
      },
    });
    try {
      await eventually(() => runId, { timeoutMs: 30_000, what: `run ${tag} to start` });
      // The step's row says `started` from the run's creation (its first step is reserved with
      // the run), before any worker has its job; its step.started comes from the worker that
      // runs it, just before the 1 s failpoint: the holder is then inside the pause.
      if (point === 'afterReserve') await eventually(() => stepStarted, { timeoutMs: 30_000, intervalMs: 10, what: `${tag}: the holder to start the step` });
      else await eventually(() => topo.provider.callsFor(tag).some((c) => c.endedAt !== null), { timeoutMs: 30_000, intervalMs: 10, what: `${tag}: the provider to answer the holder` });
      holder.signal('SIGSTOP');
    } finally {
      rescuer.signal('SIGCONT');
    }
    const id = runId!;
    try {
      // Past the frozen worker's lock, the rescuer takes the step over and commits it.
      await eventually(async () => {
        const s = await staleStep(id);
        return s.status === 'completed' && s.attempt >= 2;
      }, { timeoutMs: 60_000, intervalMs: 100, what: `${tag}: the step taken over and committed by ${rescuer.name}` });
    } finally {
      holder.signal('SIGCONT');
    }
    // The stale attempt goes on (calling the provider first when it froze before the call), and its commit is refused.
    const rejected = await eventually(() => logLines(holder.logFile, STALE_COMMIT_DROPPED, id).length > 0, { timeoutMs: 30_000, intervalMs: 100, what: `${tag}: ${holder.name} to log its dropped commit` }).catch(() => false);
    if (!rejected) saveWorkerLogs(tag, id, [holder, rescuer]);
    freezes.push({ tag, runId: id, point, rejected, record: await client });
  }
  const background = await flow.stop();

  const clients = [...freezes.map((f) => f.record), ...background.map((b) => b.record)];
  const check = await checkInvariants({ pool, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients, localPrices: LOCAL_PRICES, settleMs: 30_000 });
  const differences: string[] = [];
  let overBill = 0;
  let unsent = 0;
  for (const f of freezes) {
    const step = await staleStep(f.runId);
    const { rows } = await pool.query<{ charged: string }>(`SELECT COALESCE(-sum(amount_micros), 0)::text AS charged FROM ledger_entries WHERE run_id = $1::uuid AND kind = 'run_charge'`, [f.runId]);
    const charged = Number(rows[0]!.charged);
    const calls = topo.provider.callsFor(f.tag);
    const billed = calls.reduce((sum, c) => sum + c.billedMicros, 0);
    // Every call of one prompt is billed alike: the committed attempt's bill is any one of them.
    const committedBill = calls.at(-1)?.billedMicros ?? 0;
    const lostCharge = topo.provider.estimateMicros({ prompt: `tag:${f.tag} frozen`, model: FAKE_MODEL, maxTokens: 50 });
    const expected = committedBill + (step.attempt - 1) * lostCharge;
    // Each attempt calls at most once; a stale attempt's call may never reach the provider (the
    // provider closed its kept-alive socket while the worker was frozen), and is charged alike.
    if (calls.length < step.attempt) unsent += step.attempt - calls.length;
    if (charged !== expected || calls.length > step.attempt || calls.length === 0) {
      differences.push(`${f.tag} (${f.point}): ledger ${charged}, expected ${committedBill} + ${step.attempt - 1} × ${lostCharge} = ${expected} micro-USD; ${calls.length} provider call(s) for ${step.attempt} attempt(s)`);
    }
    overBill += charged - billed;
  }
  const rejected = freezes.filter((f) => f.rejected).length;

  console.log(JSON.stringify({ freezes: freezes.map(({ record, ...f }) => ({ ...f, resumes: record.resumes })), differences, overBill, counts: check.counts, violations: check.violations.slice(0, 20) }));
  figure('R2', 'background runs', background.length);
  figure('R2', 'ledger above the provider bill (stale calls charged their estimate)', overBill, undefined, 'µUSD');
  figure('R2', 'stale calls that never reached the provider (charged their estimate)', unsent);
  expectFigure('R2', 'stale commits rejected', `${rejected}/${freezes.length}`, { equals: `${FREEZES}/${FREEZES}` });
  expectFigure('R2', 'ledger difference', differences.length, { max: 0 }, 'runs');
  expectFigure('R2', 'checker violations', check.violations.length, { max: 0 });
}, scale(300_000, 1_800_000));
