import { setTimeout as sleep } from 'node:timers/promises';
import { checkInvariants } from './support/checker';
import { expectFigure, figure, scale } from './support/figures';
import { FAKE_MODEL } from './support/provider-fake';
import { followRun, type ClientRecord } from './support/run-client';
import { seededRandom } from './support/seeded-random';
import { startTopology, type Topology } from './support/topology';

/**
 * C1: cancellations racing the runs they cancel. Each run is two provider calls in a
 * chain (about 160 ms each, streamed); its client cancels it at a random moment after
 * `run.started`, from 0 ms (before its first step has started) to past its end, through either
 * API behind the load balancer, and every third run is cancelled twice at once. A cancel races
 * the step commits, the run's completion and the other cancel. Whatever wins, each run must end
 * exactly once: the cancel's answer, the run's record and the stream's terminal event agree
 * (cancelled, or completed before the cancel reached it), the stream ends with its terminal event
 * then `[DONE]`, nothing stays held or reserved, and every provider call is charged within what
 * it held and at least what the provider billed (the checker's invariants).
 */

const SCENARIO = 'C1';
const RUNS = scale(60, 300);
/**
 * The spread of the cancel's moment after run.started. A run alone takes about 320 ms; with all of
 * them started at once on two cores, 1 to 2 s: about a third complete first (the full count's
 * 300 runs take longer, and are spread over 10 s).
 */
const LATEST_CANCEL_MS = scale(3000, 10_000);

let topo: Topology;
beforeAll(async () => {
  topo = await startTopology();
  // Each call streams 4 chunks 40 ms apart: long enough for a cancel to land mid-call.
  topo.provider.behave({ chunkDelayMs: 40, chunks: 4 });
}, 300_000);
afterAll(async () => topo?.close(), 60_000);

interface CancelAnswer {
  status: number;
  runStatus?: string;
  errorCode?: string;
}

async function cancel(runId: string): Promise<CancelAnswer> {
  const res = await fetch(`${topo.url}/v1/runs/${runId}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${topo.account.token}` }, signal: AbortSignal.timeout(30_000) });
  const body = (await res.json().catch(() => ({}))) as { status?: string; error?: { code?: string } | null };
  return { status: res.status, runStatus: body.status, errorCode: body.error?.code };
}

/** The terminal event of a client's stream, and whether `[DONE]` came right after it, last. */
function ending(record: ClientRecord): { type?: string; code?: string; doneLast: boolean } {
  const data = record.messages.map((m) => m.data);
  const terminalAt = data.findIndex((d) => d.includes('"type":"run.completed"') || d.includes('"type":"run.failed"'));
  if (terminalAt < 0) return { doneLast: false };
  const event = JSON.parse(data[terminalAt]!) as { type: string; error?: { code: string } };
  return { type: event.type, code: event.error?.code, doneLast: data[data.length - 1] === '[DONE]' && terminalAt === data.length - 2 };
}

it(`${RUNS} runs each cancelled at a random moment (a third of them twice at once): every run ends once, and the cancel, the record and the stream agree`, async () => {
  const random = seededRandom(19);
  const cancels: Promise<CancelAnswer[]>[] = [];
  const plan = Array.from({ length: RUNS }, (_, i) => ({ i, delayMs: Math.floor(random() * LATEST_CANCEL_MS), twice: i % 3 === 0 }));
  const clients = await Promise.all(
    plan.map(async ({ i, delayMs, twice }) => {
      const workflow = {
        version: 2,
        nodes: [
          { id: 'a', uses: 'openai-chat', inputs: { prompt: `tag:c1-${i} first`, model: FAKE_MODEL, maxTokens: 40 } },
          { id: 'b', uses: 'openai-chat', inputs: { prompt: `tag:c1-${i} \${a.text}`, model: FAKE_MODEL, maxTokens: 40 } },
          { id: 'out', uses: 'output', inputs: { value: '${b.text}' } },
        ],
      };
      let cancelling = false;
      const record = await followRun(topo.url, topo.account.token, { workflow, maxCostUsd: 0.05 }, {
        deadlineMs: 120_000,
        onEvent: (message) => {
          if (cancelling || !message.data.includes('"type":"run.started"')) return;
          cancelling = true;
          const { runId } = JSON.parse(message.data) as { runId: string };
          cancels[i] = sleep(delayMs).then(() => Promise.all(Array.from({ length: twice ? 2 : 1 }, () => cancel(runId))));
        },
      });
      return record;
    }),
  );
  const answers = await Promise.all(plan.map(({ i }) => cancels[i] ?? Promise.resolve([] as CancelAnswer[])));
  const check = await checkInvariants({ databaseUrl: topo.databaseUrl, apiUrl: topo.url, token: topo.account.token, provider: topo.provider, clients, settleMs: 20_000 });
  console.log(`${SCENARIO} checker:`, JSON.stringify(check.counts), check.violations.slice(0, 20));

  const { rows } = await topo.database.pool.query<{ id: string; status: string; code: string | null }>(`SELECT id, status, error->>'code' AS code FROM runs WHERE org_id = $1::uuid`, [topo.account.orgId]);
  const records = new Map(rows.map((r) => [r.id, r]));
  let cancelled = 0;
  let completedFirst = 0;
  let disagreements = 0;
  let badAnswers = 0;
  let badEndings = 0;
  const examples: string[] = [];
  clients.forEach((client, i) => {
    const own = answers[i]!;
    const record = client.runId === undefined ? undefined : records.get(client.runId);
    const end = ending(client);
    if (!end.doneLast) badEndings += 1;
    badAnswers += own.filter((a) => a.status !== 200).length;
    if (own.length === 0 || !record) {
      disagreements += 1;
      examples.push(`run ${i}: ${own.length === 0 ? 'never cancelled' : 'no record'}`);
      return;
    }
    // Every answer (both, for a doubled cancel) says the run's final status, as the record and the stream do.
    const streamSays = end.type === 'run.completed' ? 'completed' : end.code === 'cancelled' ? 'cancelled' : `failed:${end.code}`;
    const agree = own.every((a) => a.runStatus === record.status) && record.status === streamSays && (record.status !== 'cancelled' || record.code === 'cancelled');
    if (!agree) {
      disagreements += 1;
      examples.push(`run ${client.runId}: answers ${JSON.stringify(own)}, record ${record.status}/${record.code}, stream ${streamSays}`);
    }
    if (record.status === 'cancelled') cancelled += 1;
    if (record.status === 'completed') completedFirst += 1;
  });
  console.log(`${SCENARIO}:`, { runs: RUNS, cancelled, completedFirst, disagreements, badAnswers, badEndings, examples: examples.slice(0, 5) });

  figure(SCENARIO, 'runs, each cancelled at a random moment (a third twice at once)', RUNS, undefined, 'runs');
  expectFigure(SCENARIO, 'runs the cancel stopped', cancelled, { min: 1 }, 'runs');
  expectFigure(SCENARIO, 'runs that completed before their cancel', completedFirst, { min: 1 }, 'runs');
  expectFigure(SCENARIO, 'cancel answers other than 200', badAnswers, { equals: 0 }, 'answers');
  expectFigure(SCENARIO, 'runs whose cancel answers, record and stream disagree', disagreements, { equals: 0 }, 'runs');
  expectFigure(SCENARIO, 'streams not ending with one terminal event then [DONE]', badEndings, { equals: 0 }, 'streams');
  expectFigure(SCENARIO, 'checker violations', check.violations.length, { max: 0 });
  // A call cut by a cancel is charged what it held (its bill is unknown to us): what that costs callers.
  figure(SCENARIO, "charged beyond the provider's bill (cancelled calls at their worst case)", (check.counts.chargedMicros - check.counts.billedMicros) / 1_000_000, undefined, 'USD');
  expect(cancelled + completedFirst).toBe(RUNS);
}, 300_000);
