/**
 * Run execution, end to end, beside raw BullMQ measured in the same run on the same Redis.
 * Goals: a 1-node run's p50 ≤ 5 ms (POST /v1/runs to `data: [DONE]`); a chain step ≤ 1.5× a raw
 * BullMQ chained job.
 *
 * - 1-node latency: sequential runs of `math-add` (literal inputs) → `output`; p50/p90/p99/max.
 *   Raw: a client adds a job, a worker (same process, same concurrency) processes it and
 *   publishes on a pub/sub channel, the client awaits that message.
 * - 100-node chain: 100 `math-add` nodes each reading the previous result; ms per step (median
 *   of 10 runs). Raw: 100 jobs, each processor adding the next, the last publishing completion.
 * - Throughput: 50 concurrent clients looping 1-node runs for BENCH_SECONDS; runs/s and latency
 *   under load. Raw: 50 clients looping add → process → publish-and-await.
 *
 * Each figure is taken after a warm-up. Every run's stream is checked (run.completed with the
 * right output, then [DONE]); failures are counted and printed, and make the exit status 1.
 *
 * Environment: WORKER_CONCURRENCY (16), BENCH_SECONDS (10), BENCH_RUNS (1000), BENCH_CLIENTS (50).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedisConnection } from '../../services/queue';
import { startBenchService, withBenchStack, type BenchService } from '../support/bench-stack';
import { sseMessages } from '../support/sse';

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

const WORKER_CONCURRENCY = envInt('WORKER_CONCURRENCY', 16);
const BENCH_SECONDS = envInt('BENCH_SECONDS', 10);
const LATENCY_RUNS = envInt('BENCH_RUNS', 1000);
const CLIENTS = envInt('BENCH_CLIENTS', 50);
const CHAIN_LENGTH = 100;
const CHAIN_RUNS = 10;
const RUN_TIMEOUT_MS = 60_000;

// ---------------------------------------------------------------------------------------------
// Figures

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

interface Stats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function stats(samples: readonly number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? NaN };
}

const ms = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '-');
const line = (s: Stats) => `p50 ${ms(s.p50)} ms  p90 ${ms(s.p90)} ms  p99 ${ms(s.p99)} ms  max ${ms(s.max)} ms  (n=${s.n})`;

/** Failures by phase; any makes the bench exit 1. */
const failures = new Map<string, string[]>();
function recordFailure(phase: string, err: unknown): void {
  const list = failures.get(phase) ?? [];
  list.push(err instanceof Error ? err.message : String(err));
  failures.set(phase, list);
}

// ---------------------------------------------------------------------------------------------
// The service side: POST /v1/runs and read the stream to [DONE], checking it

const ONE_NODE = {
  workflow: {
    version: 2,
    nodes: [
      { id: 'sum', uses: 'math-add', inputs: { a: 1, b: 2 } },
      { id: 'out', uses: 'output', inputs: { value: '${sum.result}' } },
    ],
  },
};
const ONE_NODE_OUTPUTS = { out: { kind: 'float', value: 3 } };

function chain(length: number) {
  return {
    workflow: {
      version: 2,
      nodes: [
        { id: 'n0', uses: 'math-add', inputs: { a: 1, b: 1 } },
        ...Array.from({ length: length - 1 }, (_, i) => ({ id: `n${i + 1}`, uses: 'math-add', inputs: { a: `\${n${i}.result}`, b: 1 } })),
        { id: 'out', uses: 'output', inputs: { value: `\${n${length - 1}.result}` } },
      ],
    },
  };
}
/** n0 = 2, each further node adds 1. */
const CHAIN_OUTPUTS = { out: { kind: 'float', value: CHAIN_LENGTH + 1 } };

/** One run, POST to `data: [DONE]`; resolves to its milliseconds, throws when the stream is not what it should be. */
async function runOnce(service: BenchService, body: string, expected: unknown): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${service.account.token}`, 'Content-Type': 'application/json' },
    body,
    signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
  });
  if (res.status !== 200 || !res.body) throw new Error(`POST /v1/runs answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  let elapsed: number | undefined;
  let terminal: string | undefined;
  let afterDone = 0;
  // Read to the end (not just to [DONE]), so the connection goes back to the keep-alive pool.
  for await (const message of sseMessages(res.body)) {
    if (elapsed !== undefined) afterDone++;
    else if (message.data === '[DONE]') elapsed = performance.now() - started;
    else terminal = message.data;
  }
  if (elapsed === undefined) throw new Error(`the stream ended without [DONE]; last event: ${terminal?.slice(0, 300)}`);
  if (afterDone > 0) throw new Error(`${afterDone} messages after [DONE]`);
  const event = JSON.parse(terminal ?? 'null') as { type?: string; outputs?: unknown } | null;
  if (event?.type !== 'run.completed') throw new Error(`the last event is not run.completed: ${terminal?.slice(0, 300)}`);
  if (!isDeepStrictEqual(event.outputs, expected)) throw new Error(`wrong outputs: ${JSON.stringify(event.outputs)}, expected ${JSON.stringify(expected)}`);
  return elapsed;
}

// ---------------------------------------------------------------------------------------------
// The raw BullMQ side, on the same Redis, in the same process, with the step queue's job options

const RAW_JOB_OPTIONS = { removeOnComplete: true, removeOnFail: { age: 86_400 }, attempts: 5, backoff: { type: 'exponential', delay: 500 } };

/**
 * One queue and one worker (its own blocking connection, the service's concurrency), as the
 * service has; job kinds by name. Commands and publishes share one connection, as the service's
 * queue and event bus do; completions arrive on one channel subscribed once.
 */
class RawBullmq {
  private readonly waiters = new Map<string, (payload: string) => void>();
  private counter = 0;

  private constructor(
    private readonly connection: Redis,
    private readonly subscriber: Redis,
    private readonly workerConnection: Redis,
    private readonly queue: Queue,
    private readonly worker: Worker,
    channel: string,
  ) {
    subscriber.on('message', (from: string, payload: string) => {
      if (from !== channel) return;
      const id = payload.slice(0, payload.indexOf(' '));
      const waiter = this.waiters.get(id);
      if (!waiter) return;
      this.waiters.delete(id);
      waiter(payload);
    });
  }

  static async start(redisUrl: string, concurrency: number): Promise<RawBullmq> {
    const prefix = 'svcraw';
    const channel = `${prefix}:done`;
    const connection = createRedisConnection(redisUrl);
    const subscriber = createRedisConnection(redisUrl);
    const workerConnection = createRedisConnection(redisUrl);
    const queue = new Queue('raw', { connection, prefix, defaultJobOptions: RAW_JOB_OPTIONS });
    const processor = async (job: Job): Promise<void> => {
      if (job.name === 'single') {
        const { id, a, b } = job.data as { id: string; a: number; b: number };
        await connection.publish(channel, `${id} ${a + b}`);
        return;
      }
      const { id, i, n, value } = job.data as { id: string; i: number; n: number; value: number };
      if (i + 1 < n) await queue.add('chain', { id, i: i + 1, n, value: value + 1 }, { jobId: `${id}_${i + 1}` });
      else await connection.publish(channel, `${id} ${value + 1}`);
    };
    // The step worker's settings (workers/step-worker.ts) with the default 30 s lock.
    const worker = new Worker('raw', processor, { connection: workerConnection, prefix, concurrency, lockDuration: 30_000, stalledInterval: 15_000, maxStalledCount: 5, autorun: true });
    worker.on('failed', (job, err) => recordFailure('raw BullMQ', `job ${job?.id}: ${err.message}`));
    worker.on('error', (err) => recordFailure('raw BullMQ', err));
    const raw = new RawBullmq(connection, subscriber, workerConnection, queue, worker, channel);
    await subscriber.subscribe(channel);
    await worker.waitUntilReady();
    return raw;
  }

  /** The completion message of `id`; register before adding the job (the worker may publish before `add` resolves). */
  private completionOf(id: string): Promise<string> {
    const done = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new Error(`no completion message for ${id} within ${RUN_TIMEOUT_MS} ms`));
      }, RUN_TIMEOUT_MS);
      this.waiters.set(id, (payload) => {
        clearTimeout(timer);
        resolve(payload);
      });
    });
    // Awaited by the caller after its `add`; if that `add` throws first, the timeout's rejection is not unhandled.
    done.catch(() => undefined);
    return done;
  }

  /** add → process → publish, awaited; resolves to its milliseconds. */
  async once(): Promise<number> {
    const id = `single_${++this.counter}`;
    const started = performance.now();
    const done = this.completionOf(id);
    await this.queue.add('single', { id, a: 1, b: 2 }, { jobId: id });
    const payload = await done;
    const elapsed = performance.now() - started;
    if (payload !== `${id} 3`) throw new Error(`raw job ${id}: unexpected completion "${payload}"`);
    return elapsed;
  }

  /** A chain of `n` jobs, each adding the next, the last publishing; resolves to its total milliseconds. */
  async chainOnce(n: number): Promise<number> {
    const id = `chain_${++this.counter}`;
    const started = performance.now();
    const done = this.completionOf(id);
    await this.queue.add('chain', { id, i: 0, n, value: 1 }, { jobId: `${id}_0` });
    const payload = await done;
    const elapsed = performance.now() - started;
    if (payload !== `${id} ${n + 1}`) throw new Error(`raw chain ${id}: unexpected completion "${payload}"`);
    return elapsed;
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
    await this.subscriber.quit();
    await this.workerConnection.quit();
    await this.connection.quit();
  }
}

// ---------------------------------------------------------------------------------------------
// Phases

/** `count` sequential calls after `warmup` untimed ones; failures are recorded under `phase`. */
async function sequential(phase: string, warmup: number, count: number, once: () => Promise<number>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await once().catch((err: unknown) => recordFailure(`${phase} (warm-up)`, err));
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    try {
      samples.push(await once());
    } catch (err) {
      recordFailure(phase, err);
    }
  }
  return samples;
}

interface Load {
  perSecond: number;
  latency: Stats;
  completed: number;
}

/** `clients` loops of `once` for `seconds` (after a warm-up of a fifth of that, at least 1 s). */
async function load(phase: string, clients: number, seconds: number, once: () => Promise<number>): Promise<Load> {
  const loop = async (until: number, samples: number[] | undefined) => {
    while (performance.now() < until) {
      try {
        const elapsed = await once();
        samples?.push(elapsed);
      } catch (err) {
        recordFailure(samples ? phase : `${phase} (warm-up)`, err);
      }
    }
  };
  const warmUntil = performance.now() + Math.max(1, seconds / 5) * 1000;
  await Promise.all(Array.from({ length: clients }, () => loop(warmUntil, undefined)));
  const samples: number[] = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, () => loop(started + seconds * 1000, samples)));
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: samples.length / elapsed, latency: stats(samples), completed: samples.length };
}

const median = (samples: readonly number[]) => percentile([...samples].sort((a, b) => a - b), 0.5);

// ---------------------------------------------------------------------------------------------

interface Row {
  label: string;
  service: number;
  raw: number;
  unit: string;
  /** The goal and whether it is met, as printed. */
  goal?: string;
}

function table(rows: Row[]): string {
  const header = ['', 'service', 'raw BullMQ', 'service/raw', 'goal'];
  const body = rows.map((r) => {
    const ratio = r.service / r.raw;
    return [r.label, `${ms(r.service)} ${r.unit}`, `${ms(r.raw)} ${r.unit}`, `${ms(ratio)}×`, r.goal ?? ''];
  });
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...body.map((cells) => cells[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(fmt)].join('\n');
}

async function main(): Promise<number> {
  const cpus = os.cpus();
  console.log(`machine: ${cpus.length} CPUs, ${cpus[0]?.model.trim() ?? 'unknown model'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`);
  console.log(`settings: WORKER_CONCURRENCY=${WORKER_CONCURRENCY} (service and raw), BENCH_RUNS=${LATENCY_RUNS}, BENCH_CLIENTS=${CLIENTS}, BENCH_SECONDS=${BENCH_SECONDS}; ROLE=all in this process, LOG_LEVEL=silent, fs blobs`);

  return withBenchStack(async (stack) => {
    const service = await startBenchService(stack, { env: { WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) } });
    let raw: RawBullmq | undefined;
    try {
      raw = await RawBullmq.start(stack.redisUrl, WORKER_CONCURRENCY);
      const rawBull = raw;
      console.log(`stack: Redis ${stack.redisUrl}, Postgres 127.0.0.1:${stack.postgres.port}, service ${service.url}\n`);
      const oneNode = JSON.stringify(ONE_NODE);
      const chainBody = JSON.stringify(chain(CHAIN_LENGTH));
      const runOne = () => runOnce(service, oneNode, ONE_NODE_OUTPUTS);

      console.log(`(a) 1-node run, POST → [DONE], ${LATENCY_RUNS} sequential runs`);
      const oneService = stats(await sequential('(a) 1-node run', 100, LATENCY_RUNS, runOne));
      console.log(`    service     ${line(oneService)}`);
      console.log(`(b) raw BullMQ add → process → publish, ${LATENCY_RUNS} sequential jobs`);
      const oneRaw = stats(await sequential('(b) raw job', 200, LATENCY_RUNS, () => rawBull.once()));
      console.log(`    raw BullMQ  ${line(oneRaw)}`);
      console.log(`    service/raw p50 ${ms(oneService.p50 / oneRaw.p50)}×  p99 ${ms(oneService.p99 / oneRaw.p99)}×`);

      console.log(`(c) ${CHAIN_LENGTH}-node chain, POST → [DONE], median of ${CHAIN_RUNS}`);
      const chainService = await sequential('(c) chain run', 2, CHAIN_RUNS, () => runOnce(service, chainBody, CHAIN_OUTPUTS));
      const chainRaw = await sequential('(c) raw chain', 2, CHAIN_RUNS, () => rawBull.chainOnce(CHAIN_LENGTH));
      const stepService = median(chainService) / CHAIN_LENGTH;
      const stepRaw = median(chainRaw) / CHAIN_LENGTH;
      console.log(`    service     ${ms(median(chainService), 1)} ms per run, ${ms(stepService)} ms per step  (runs: ${chainService.map((t) => t.toFixed(0)).join(' ')} ms)`);
      console.log(`    raw BullMQ  ${ms(median(chainRaw), 1)} ms per chain, ${ms(stepRaw)} ms per job  (chains: ${chainRaw.map((t) => t.toFixed(0)).join(' ')} ms)`);
      console.log(`    service/raw ${ms(stepService / stepRaw)}×  (goal ≤ 1.5×)`);

      console.log(`(d) throughput, ${CLIENTS} concurrent clients for ${BENCH_SECONDS} s each side`);
      const loadService = await load('(d) 1-node run under load', CLIENTS, BENCH_SECONDS, runOne);
      console.log(`    service     ${ms(loadService.perSecond, 1)} runs/s (${loadService.completed} runs)  latency ${line(loadService.latency)}`);
      const loadRaw = await load('(d) raw job under load', CLIENTS, BENCH_SECONDS, () => rawBull.once());
      console.log(`    raw BullMQ  ${ms(loadRaw.perSecond, 1)} jobs/s (${loadRaw.completed} jobs)  latency ${line(loadRaw.latency)}`);
      console.log(`    raw/service ${ms(loadRaw.perSecond / loadService.perSecond)}×`);

      console.log('\nsummary');
      console.log(
        table([
          { label: '1-node run p50', service: oneService.p50, raw: oneRaw.p50, unit: 'ms', goal: `service ≤ 5 ms: ${oneService.p50 <= 5 ? 'met' : 'NOT met'}` },
          { label: '1-node run p99', service: oneService.p99, raw: oneRaw.p99, unit: 'ms' },
          { label: `${CHAIN_LENGTH}-node chain, per step`, service: stepService, raw: stepRaw, unit: 'ms', goal: `≤ 1.5×: ${stepService / stepRaw <= 1.5 ? 'met' : 'NOT met'}` },
          { label: `${CLIENTS} clients, p50 latency`, service: loadService.latency.p50, raw: loadRaw.latency.p50, unit: 'ms' },
          { label: `${CLIENTS} clients, p99 latency`, service: loadService.latency.p99, raw: loadRaw.latency.p99, unit: 'ms' },
        ]),
      );
      console.log(
        `${`${CLIENTS} clients, throughput`.padEnd(26)}  service ${ms(loadService.perSecond, 1)} runs/s, raw ${ms(loadRaw.perSecond, 1)} jobs/s: raw/service ${ms(loadRaw.perSecond / loadService.perSecond)}×`,
      );
    } finally {
      await raw?.close();
      await service.close();
    }

    if (failures.size === 0) {
      console.log('\ncorrectness: every run ended with run.completed, the expected output and [DONE]; every raw job completed');
      return 0;
    }
    console.log('\nFAILURES');
    for (const [phase, list] of failures) {
      console.log(`  ${phase}: ${list.length}`);
      for (const message of [...new Set(list)].slice(0, 5)) console.log(`    - ${message}`);
    }
    return 1;
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
