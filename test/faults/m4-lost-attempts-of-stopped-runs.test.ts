import { setTimeout as sleep } from 'node:timers/promises';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { FAKE_MODEL } from './support/provider-fake';
import { followRun, type ClientRecord } from './support/run-client';
import { startTopology, type Topology } from './support/topology';

/**
 * M4: runs of three priced `openai-chat` steps side by side, whose worst cases
 * together fit the cap once but not with a lost attempt's charge on top, while both workers are
 * SIGKILLed again and again, each time 3 s after they are ready (mid-step: a call lasts about
 * 2.5 s). A redelivered step takes its lost attempt over, is charged that attempt's worst case,
 * and no longer fits: it fails the run (`spend_cap_exceeded`) while its siblings' attempts, lost
 * with the same workers, are still `running` and holding their reservations. Those attempts must
 * be settled like any lost attempt (charged their lost charge, reservations released) within
 * STEP_STUCK_SECONDS plus one reaper interval: the checker then finds every terminal run with
 * terminal steps only, nothing held or reserved, its recorded cost equal to its ledger charges,
 * and each organization's holds equal to what its unfinished runs hold.
 */

const SCENARIO = 'M4';
const RUNS = scale(30, 300);
const KILLS = scale(4, 30);
const CONCURRENCY = scale(15, 40);
const CAP_USD = 0.3;
/** About 79,000 micro-USD each at the fake's 8 USD per million output tokens: three fit 0.30 USD, not three plus a lost one. */
const MAX_TOKENS = 9_800;
const STEP_STUCK_SECONDS = 10;
const REAPER_INTERVAL_SECONDS = 2;

let topo: Topology;
beforeAll(async () => {
  topo = await startTopology({ apis: 1, creditUsd: String(Math.ceil(RUNS * CAP_USD) + 10), env: { STEP_STUCK_SECONDS: String(STEP_STUCK_SECONDS), REAPER_INTERVAL_SECONDS: String(REAPER_INTERVAL_SECONDS) } });
  // About 2.5 s a call, billed 8,000 output tokens (64,000 micro-USD): three answered calls fit the cap.
  topo.provider.behave({ delayMs: 500, chunks: 10, chunkDelayMs: 200, completionTokens: 8_000 });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

function runBody(tag: string): unknown {
  const chats = ['a', 'b', 'c'].map((id) => ({ id, uses: 'openai-chat', inputs: { prompt: `tag:${tag} say something (${id})`, model: FAKE_MODEL, maxTokens: MAX_TOKENS } }));
  const outputs = chats.map((c) => ({ id: `out_${c.id}`, uses: 'output', inputs: { value: `\${${c.id}.text}` } }));
  return { workflow: { version: 2, nodes: [...chats, ...outputs] }, maxCostUsd: CAP_USD };
}

function failureCode(client: ClientRecord): string | undefined {
  for (const m of client.messages) {
    if (!m.data.includes('"run.failed"')) continue;
    return (JSON.parse(m.data) as { error?: { code?: string } }).error?.code ?? 'unknown';
  }
  return undefined;
}

it(`M4: ${RUNS} runs of parallel priced steps over the cap with a lost attempt, both workers SIGKILLed ${KILLS} times: every lost attempt of a stopped run is settled`, async () => {
  const pool = topo.database.pool;
  const clients: ClientRecord[] = [];
  let next = 0;
  const client = async (): Promise<void> => {
    while (next < RUNS) {
      const tag = `m4-${(next += 1)}`;
      clients.push(await followRun(topo.url, topo.account.token, runBody(tag), { deadlineMs: scale(180_000, 600_000), headTimeoutMs: 60_000 }));
    }
  };
  const flow = Promise.all(Array.from({ length: CONCURRENCY }, () => client()));
  let flowing = true;
  void flow.finally(() => (flowing = false));

  let kills = 0;
  // Kills go on past KILLS (to twice as many) until a run has stopped over its cap: a kill that
  // found the workers between calls loses nothing, and the scenario is about runs stopped with
  // attempts lost.
  const capStopped = () => clients.some((c) => failureCode(c) === 'spend_cap_exceeded');
  while (flowing && (kills < KILLS || (kills < 2 * KILLS && !capStopped()))) {
    // 3 s after both are ready: mid-call for the steps they took.
    await sleep(3_000);
    if (!flowing) break;
    await Promise.all(topo.workers.map((w) => w.kill()));
    kills += 1;
    await Promise.all(topo.workers.map((w) => w.start()));
    console.log(`${SCENARIO} kill ${kills} (${KILLS} at least): both workers killed and started again, ${clients.length} of ${RUNS} runs done`);
  }
  await flow;

  // The lost attempts of a stopped run are settled within STEP_STUCK_SECONDS plus a reaper interval (and the redelivery's lock).
  const check = await checkInvariants({ pool, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients, settleMs: 60_000 });
  const ids = clients.flatMap((c) => (c.runId ? [c.runId] : []));
  const { rows } = await pool.query<{ settled_by_stop: string; latest_ms: string | null; stopped_with_open: string }>(
    `SELECT count(*) FILTER (WHERE s.status = 'cancelled' AND s.finished_at > r.finished_at)::text AS settled_by_stop,
            max(EXTRACT(EPOCH FROM (s.finished_at - r.finished_at)) * 1000) FILTER (WHERE s.status = 'cancelled' AND s.finished_at > r.finished_at)::text AS latest_ms,
            count(DISTINCT r.id) FILTER (WHERE s.status = 'cancelled' AND s.finished_at > r.finished_at)::text AS stopped_with_open
       FROM runs r JOIN steps s ON s.run_id = r.id WHERE r.id = ANY($1::uuid[])`,
    [ids],
  );
  const codes = new Map<string, number>();
  for (const c of clients) {
    const code = failureCode(c) ?? 'completed';
    codes.set(code, (codes.get(code) ?? 0) + 1);
  }
  const stillOpen = check.violations.filter((v) => /is still (pending|queued|running) in a|still reserves|still holds|holds \d+ but its unfinished runs hold|still hold or reserve/.test(v));
  console.log(`${SCENARIO} checker:`, JSON.stringify({ counts: check.counts, codes: Object.fromEntries(codes), settled: rows[0] }), check.violations.slice(0, 20));

  figure(SCENARIO, 'runs; kills of both workers', `${clients.length}; ${kills}`);
  figure(SCENARIO, 'runs ended: completed / spend_cap_exceeded / other', `${codes.get('completed') ?? 0} / ${codes.get('spend_cap_exceeded') ?? 0} / ${clients.length - (codes.get('completed') ?? 0) - (codes.get('spend_cap_exceeded') ?? 0)}`);
  figure(SCENARIO, 'lost attempts settled after their run stopped (runs)', `${rows[0]!.settled_by_stop} (${rows[0]!.stopped_with_open})`);
  figure(SCENARIO, 'latest settlement after its run stopped', Math.round(Number(rows[0]!.latest_ms ?? 0)), undefined, 'ms');
  expectFigure(SCENARIO, 'terminal runs with open steps, reservations or holds', stillOpen.length, { max: 0 });
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
  // The scenario did what it is for: runs stopped while attempts of theirs were lost.
  expect(codes.get('spend_cap_exceeded') ?? 0).toBeGreaterThan(0);
  expect(Number(rows[0]!.settled_by_stop)).toBeGreaterThan(0);
}, scale(420_000, 2_400_000));
