import { performance } from 'node:perf_hooks';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { createRedisConnection, STEP_JOB_OPTIONS, stepWorkerSettings } from '../../../services/queue';
import type { BenchContext } from './context';
import { RUN_TIMEOUT_MS } from './service-client';

/** The step worker's settings with the default 30 s lock, for a BullMQ peer's worker (as our queue's job options, STEP_JOB_OPTIONS, for its jobs). */
export const PEER_WORKER_SETTINGS = stepWorkerSettings(30_000);

type ChainJob = { id: string; i: number; n: number; value: number; durable: boolean };

/**
 * The peer "raw BullMQ": one queue and one worker (its own blocking connection, our concurrency
 * and lock settings) on the same Redis; a client adds a job, the worker processes it and
 * publishes a completion on a pub/sub channel, the client awaits that message. Chains: each job
 * adds the next; `durable` chains also insert one row per step into Postgres (the same server
 * as ours, one autocommitted INSERT: one WAL flush with fsync on) before adding the next.
 */
export class RawBullmq {
  private readonly waiters = new Map<string, (payload: string) => void>();
  private counter = 0;

  private constructor(
    private readonly connection: Redis,
    private readonly subscriber: Redis,
    private readonly workerConnection: Redis,
    private readonly queue: Queue,
    private readonly worker: Worker,
    private readonly pool: pg.Pool,
  ) {}

  static async start(options: { redisUrl: string; databaseUrl: string; concurrency: number; prefix?: string; onFailure: (err: unknown) => void }): Promise<RawBullmq> {
    const prefix = options.prefix ?? 'svcraw';
    const channel = `${prefix}:done`;
    const connection = createRedisConnection(options.redisUrl);
    const subscriber = createRedisConnection(options.redisUrl);
    const workerConnection = createRedisConnection(options.redisUrl);
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10 });
    await pool.query('CREATE TABLE IF NOT EXISTS bench_raw_steps (chain text NOT NULL, i int NOT NULL, value int NOT NULL, at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (chain, i))');
    const queue = new Queue('raw', { connection, prefix, defaultJobOptions: STEP_JOB_OPTIONS });
    const processor = async (job: Job): Promise<void> => {
      if (job.name === 'single') {
        const { id, a, b } = job.data as { id: string; a: number; b: number };
        await connection.publish(channel, `${id} ${a + b}`);
        return;
      }
      const { id, i, n, value, durable } = job.data as ChainJob;
      if (durable) await pool.query('INSERT INTO bench_raw_steps (chain, i, value) VALUES ($1, $2, $3)', [id, i, value + 1]);
      if (i + 1 < n) await queue.add('chain', { id, i: i + 1, n, value: value + 1, durable } satisfies ChainJob, { jobId: `${id}_${i + 1}` });
      else await connection.publish(channel, `${id} ${value + 1}`);
    };
    const worker = new Worker('raw', processor, { connection: workerConnection, prefix, concurrency: options.concurrency, ...PEER_WORKER_SETTINGS, autorun: true });
    worker.on('failed', (job, err) => options.onFailure(new Error(`raw job ${job?.id}: ${err.message}`)));
    worker.on('error', (err) => options.onFailure(err));
    const raw = new RawBullmq(connection, subscriber, workerConnection, queue, worker, pool);
    subscriber.on('message', (from: string, payload: string) => {
      if (from !== channel) return;
      const id = payload.slice(0, payload.indexOf(' '));
      const waiter = raw.waiters.get(id);
      if (!waiter) return;
      raw.waiters.delete(id);
      waiter(payload);
    });
    await subscriber.subscribe(channel);
    await worker.waitUntilReady();
    return raw;
  }

  /** The peer on a bench's stack with the shared service's concurrency; a failed job is a failure of `phase`. */
  static forBench(ctx: BenchContext, phase: string): Promise<RawBullmq> {
    return RawBullmq.start({ redisUrl: ctx.stack.redisUrl, databaseUrl: ctx.stack.databaseUrl, concurrency: 16, onFailure: (err) => ctx.fail(phase, err) });
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

  /** A chain of `n` jobs, each adding the next (after its durable insert when `durable`), the last publishing; resolves to its milliseconds. */
  async chainOnce(n: number, durable = false): Promise<number> {
    const id = `chain_${++this.counter}`;
    const started = performance.now();
    const done = this.completionOf(id);
    await this.queue.add('chain', { id, i: 0, n, value: 1, durable } satisfies ChainJob, { jobId: `${id}_0` });
    const payload = await done;
    const elapsed = performance.now() - started;
    if (payload !== `${id} ${n + 1}`) throw new Error(`raw chain ${id}: unexpected completion "${payload}"`);
    if (durable) {
      const { rows } = await this.pool.query<{ count: number }>('SELECT count(*)::int AS count FROM bench_raw_steps WHERE chain = $1', [id]);
      if (rows[0]!.count !== n) throw new Error(`raw durable chain ${id}: ${rows[0]!.count} rows for ${n} steps`);
    }
    return elapsed;
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
    await this.subscriber.quit();
    await this.workerConnection.quit();
    await this.connection.quit();
    await this.pool.end();
  }

  /** The completion message of `id`; registered before the job is added (the worker may publish before `add` resolves). */
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
    done.catch(() => undefined);
    return done;
  }
}
