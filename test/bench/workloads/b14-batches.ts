import { setTimeout as sleep } from 'node:timers/promises';
import type { Workload } from '../support/context';
import { Latency } from '../support/latency';
import { openLoop, sustainedRate } from '../support/load';
import { cpuBetween, stackCpu } from '../support/process-cpu';
import { atLeast, atMost, type Row } from '../support/report';
import { ONE_NODE, ONE_NODE_OUTPUTS, post, runOnce, textOf } from '../support/service-client';
import { ladder, SUSTAINED_P99_MS } from './b4-sustained';

/** B1's run with its first operand as an input: what every row of the batch runs. */
const ROW_WORKFLOW = {
  version: 2,
  nodes: [
    { id: 'a', uses: 'input', outputType: 'FLOAT' },
    { id: 'sum', uses: 'math-add', inputs: { a: '${a.value}', b: 2 } },
    { id: 'out', uses: 'output', inputs: { value: '${sum.result}' } },
  ],
};

interface BatchRecord {
  id: string;
  status: string;
  rows: { total: number; completed: number; failed: number; cancelled: number };
}

/** CPU milliseconds of the stack (this process, Postgres, Redis) between two readings, per item. */
function cpuMsPer(before: ReturnType<typeof stackCpu>, after: ReturnType<typeof stackCpu>, items: number): { total: number; self: number; postgres: number; redis: number } {
  const used = cpuBetween(before, after);
  const per = (s: number) => (s * 1000) / items;
  return { total: per(used.self + used.postgres + used.redis), self: per(used.self), postgres: per(used.postgres), redis: per(used.redis) };
}

export async function startBatch(url: string, token: string, rows: number): Promise<string> {
  const body = JSON.stringify({ workflow: ROW_WORKFLOW, rows: Array.from({ length: rows }, (_, i) => ({ a: i })), concurrency: 1000 });
  const res = await post(`${url}/v1/batches`, body, { Authorization: `Bearer ${token}` });
  const text = await textOf(res);
  if (res.statusCode !== 201) throw new Error(`POST /v1/batches answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return (JSON.parse(text) as BatchRecord).id;
}

export async function batchEnd(url: string, token: string, id: string, timeoutMs: number): Promise<BatchRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${url}/v1/batches/${id}`, { headers: { Authorization: `Bearer ${token}` } });
    const batch = (await res.json()) as BatchRecord;
    if (batch.status === 'completed' || batch.status === 'cancelled') return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms: ${JSON.stringify(batch.rows)}`);
    await sleep(50);
  }
}

/** `count` B1 runs one after another; their latencies. */
async function sequentialRuns(service: { url: string; account: { token: string } }, count: number, until?: () => boolean): Promise<Latency> {
  const latency = new Latency();
  const body = JSON.stringify(ONE_NODE);
  for (let i = 0; i < count && (until === undefined || !until()); i++) latency.record(await runOnce(service, body, ONE_NODE_OUTPUTS));
  return latency;
}

/**
 * B14: a batch of B1's one-node workflow (10,000 rows; 2,000 quick) in the same run as B4: rows
 * per second from creation to the batch's end beside B4's sustained runs per second, and the
 * stack's CPU per row (this process, Postgres, Redis) beside B4's CPU per run at its sustained
 * rate. Then B1's sequential latency alone and beside a running batch (interactive work first:
 * docs/scheduling.md, The batch lane).
 */
export const b14: Workload = {
  id: 'B14',
  title: 'batches: rows/s and CPU per row beside B4; B1 latency beside a running batch',
  async run(ctx) {
    const service = await ctx.service();
    const { url } = service;
    const token = service.account.token;
    const rows = ctx.scale(10_000, 2_000);
    const seconds = ctx.scale(10, 4);

    ctx.say('B4 (ours), for the same run:');
    const b4 = await sustainedRate(ctx, 'B14 B4', { rates: ladder(ctx, 20_000), seconds, p99Ms: SUSTAINED_P99_MS }, () => runOnce(service, JSON.stringify(ONE_NODE), ONE_NODE_OUTPUTS));
    const runsPerSecond = b4.best?.completed ?? 0;
    // The CPU of one run at that rate: the same open loop again, measured whole.
    let cpuPerRun = { total: NaN, self: NaN, postgres: NaN, redis: NaN };
    if (b4.best) {
      const before = stackCpu(ctx.stack);
      const again = await openLoop(ctx, 'B14 B4 CPU', { rate: b4.best.rate, seconds }, () => runOnce(service, JSON.stringify(ONE_NODE), ONE_NODE_OUTPUTS));
      cpuPerRun = cpuMsPer(before, stackCpu(ctx.stack), Math.round(b4.best.rate * seconds * 1.2) - again.failed);
      ctx.say(`B4 at ${b4.best.rate}/s: CPU per run ${cpuPerRun.total.toFixed(2)} ms (process ${cpuPerRun.self.toFixed(2)}, Postgres ${cpuPerRun.postgres.toFixed(2)}, Redis ${cpuPerRun.redis.toFixed(2)})`);
    }

    ctx.say(`a ${rows}-row batch:`);
    const before = stackCpu(ctx.stack);
    const started = performance.now();
    const id = await startBatch(url, token, rows);
    const end = await batchEnd(url, token, id, 600_000);
    const elapsedS = (performance.now() - started) / 1000;
    const cpuPerRow = cpuMsPer(before, stackCpu(ctx.stack), rows);
    if (end.rows.completed !== rows) ctx.fail('B14 batch', new Error(`${end.rows.completed} of ${rows} rows completed (${JSON.stringify(end.rows)})`));
    const rowsPerSecond = rows / elapsedS;
    ctx.say(`${rows} rows in ${elapsedS.toFixed(1)} s: ${rowsPerSecond.toFixed(0)} rows/s; CPU per row ${cpuPerRow.total.toFixed(2)} ms (process ${cpuPerRow.self.toFixed(2)}, Postgres ${cpuPerRow.postgres.toFixed(2)}, Redis ${cpuPerRow.redis.toFixed(2)})`);

    ctx.say('B1 alone, then beside a running batch:');
    const count = ctx.scale(300, 100);
    const alone = await sequentialRuns(service, count);
    let batchDone = false;
    const beside = await startBatch(url, token, rows);
    const ended = batchEnd(url, token, beside, 600_000).finally(() => (batchDone = true));
    // Only runs made while the batch ran count.
    const besideStarted = performance.now();
    const during = await sequentialRuns(service, count, () => batchDone);
    // What the batch did meanwhile: batches run on what interactive work leaves, not nothing.
    const besideSeconds = (performance.now() - besideStarted) / 1000;
    const progress = (await (await fetch(`${url}/v1/batches/${beside}`, { headers: { Authorization: `Bearer ${token}` } })).json()) as BatchRecord;
    const rowsBeside = progress.rows.completed + progress.rows.failed + progress.rows.cancelled;
    await ended;
    ctx.say(`B1 alone: ${alone.summary()}; beside the batch: ${during.summary()}`);
    ctx.say(`the batch meanwhile: ${rowsBeside} rows ended in ${besideSeconds.toFixed(1)} s (${(rowsBeside / besideSeconds).toFixed(0)} rows/s beside B1's sequential runs)`);
    const p50Ratio = during.percentile(50) / alone.percentile(50);
    const p99Ratio = during.percentile(99) / alone.percentile(99);

    const rows_: Row[] = [
      { id: 'B14', figure: 'batch rows/s (10,000 one-node rows)', ours: rowsPerSecond, unit: '/s', kind: 'rate', peer: { name: 'B4 runs/s', value: runsPerSecond }, goal: atLeast('≥ 5× B4', rowsPerSecond, 5 * runsPerSecond) },
      { id: 'B14', figure: 'CPU per row (process + Postgres + Redis)', ours: cpuPerRow.total, unit: 'ms', kind: 'time', peer: { name: 'B4 CPU per run', value: cpuPerRun.total }, goal: atMost('≤ ½ of B4', cpuPerRow.total, cpuPerRun.total / 2) },
      { id: 'B14', figure: 'B1 p50 beside a batch ÷ alone', ours: p50Ratio, unit: '×', kind: 'time', goal: atMost('≤ 1.5×', p50Ratio, 1.5) },
      { id: 'B14', figure: 'B1 p99 beside a batch ÷ alone', ours: p99Ratio, unit: '×', kind: 'time', goal: atMost('≤ 1.5×', p99Ratio, 1.5) },
      { id: 'B14', figure: 'B1 runs measured beside the batch', ours: during.count, unit: 'runs', kind: 'rate' },
      { id: 'B14', figure: "the batch's rows/s beside B1's runs", ours: rowsBeside / besideSeconds, unit: '/s', kind: 'rate' },
    ];
    return rows_;
  },
};
