import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { createRedisConnection, STEP_JOB_OPTIONS } from '../../../services/queue';
import type { BenchContext } from './context';
import { PEER_WORKER_SETTINGS } from './raw-bullmq';

type StepJob = { runId: string; a: number; b: number };

/** The floor's SQL, one table and two statements (make pg-instructions replays them too). */
export const FLOOR_SQL = {
  table: 'CREATE TABLE IF NOT EXISTS bench_floor_runs (id uuid PRIMARY KEY, body jsonb NOT NULL, status text NOT NULL, outputs jsonb, created_at timestamptz NOT NULL DEFAULT now())',
  /** $1 the run's id, $2 the request's body. */
  insert: `INSERT INTO bench_floor_runs (id, body, status) VALUES ($1, $2, 'pending')`,
  /** $1 the run's id, $2 its outputs. */
  complete: `UPDATE bench_floor_runs SET status = 'completed', outputs = $2 WHERE id = $1`,
} as const;

/**
 * The peer "design floor": what any implementation of DESIGN.md's execution path must do for a
 * 1-node run, and nothing more, on the same Redis and Postgres and in one process as the bench's
 * service, answering the same client (POST /v1/runs → SSE → `data: [DONE]`, checked the same way):
 *
 * 1. the API reads and parses the body and persists the run (one autocommitted INSERT: one WAL
 *    flush with fsync on) before anything is acknowledged;
 * 2. it opens the stream with `run.started`, and enqueues the step (a BullMQ job: the queue hop);
 * 3. a worker runs the node and persists the result (one autocommitted UPDATE, flushed) before the
 *    run's end is told to anyone;
 * 4. the run's end is appended to its replay log and published in one round trip (MULTI RPUSH +
 *    PUBLISH), and the API holding the stream writes it with `[DONE]`.
 *
 * Left out, and all required of the service by SPEC.md or DESIGN.md: authentication, validation
 * against the contract, rate limits, the stream's slot, the spend cap's reservation and
 * settlement, the step rows, the ledger, the organization's balance, the other events
 * (`step.started`, `step.completed`), metrics and logs. So no implementation of the design does
 * less per run than this; what it holds on a machine bounds what ours can
 * (docs/performance/design-floor.md).
 */
export class DesignFloor {
  readonly account = { token: 'floor' };
  private readonly streams = new Map<string, http.ServerResponse>();

  private constructor(
    readonly url: string,
    private readonly server: http.Server,
    private readonly pool: pg.Pool,
    private readonly connection: Redis,
    private readonly subscriber: Redis,
    private readonly workerConnection: Redis,
    private readonly queue: Queue,
    private readonly worker: Worker,
  ) {}

  static async start(options: { redisUrl: string; databaseUrl: string; concurrency: number; onFailure: (err: unknown) => void }): Promise<DesignFloor> {
    const prefix = 'svcfloor';
    const channel = `${prefix}:events`;
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10 });
    await pool.query(FLOOR_SQL.table);
    const connection = createRedisConnection(options.redisUrl);
    const subscriber = createRedisConnection(options.redisUrl);
    const workerConnection = createRedisConnection(options.redisUrl);
    const queue = new Queue('floor', { connection, prefix, defaultJobOptions: STEP_JOB_OPTIONS });
    const processor = async (job: Job): Promise<void> => {
      const { runId, a, b } = job.data as StepJob;
      const outputs = { out: { kind: 'float', value: a + b } };
      await pool.query(FLOOR_SQL.complete, [runId, outputs]);
      const event = JSON.stringify({ type: 'run.completed', runId, outputs });
      await connection.multi().rpush(`${prefix}:run:${runId}:events`, event).publish(channel, `${runId} ${event}`).exec();
    };
    const worker = new Worker('floor', processor, { connection: workerConnection, prefix, concurrency: options.concurrency, ...PEER_WORKER_SETTINGS });
    worker.on('failed', (job, err) => options.onFailure(new Error(`floor job ${job?.id}: ${err.message}`)));
    worker.on('error', (err) => options.onFailure(err));

    // Nobody knows its port before `listen` resolves: the handlers are attached once `floor` exists.
    const server = http.createServer();
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const floor = new DesignFloor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, pool, connection, subscriber, workerConnection, queue, worker);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        floor.admit(Buffer.concat(chunks).toString('utf8'), res).catch((err: unknown) => {
          options.onFailure(err);
          if (!res.headersSent) res.writeHead(500).end();
          else res.end();
        });
      });
    });
    subscriber.on('message', (from: string, payload: string) => {
      if (from !== channel) return;
      const space = payload.indexOf(' ');
      const runId = payload.slice(0, space);
      const res = floor.streams.get(runId);
      if (!res) return;
      floor.streams.delete(runId);
      res.end(`data: ${payload.slice(space + 1)}\n\ndata: [DONE]\n\n`);
    });
    await subscriber.subscribe(channel);
    await worker.waitUntilReady();
    return floor;
  }

  /** The peer on a bench's stack with the shared service's worker concurrency; a failure is one of `phase`. */
  static forBench(ctx: BenchContext, phase: string): Promise<DesignFloor> {
    return DesignFloor.start({ redisUrl: ctx.stack.redisUrl, databaseUrl: ctx.stack.databaseUrl, concurrency: 16, onFailure: (err) => ctx.fail(phase, err) });
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server.close(resolve));
    await this.worker.close();
    await this.queue.close();
    await this.subscriber.quit();
    await this.workerConnection.quit();
    await this.connection.quit();
    await this.pool.end();
  }

  private async admit(text: string, res: http.ServerResponse): Promise<void> {
    const body = JSON.parse(text) as { workflow: { nodes: { inputs?: { a?: number; b?: number } }[] } };
    const { a = 0, b = 0 } = body.workflow.nodes[0]?.inputs ?? {};
    const runId = randomUUID();
    await this.pool.query(FLOOR_SQL.insert, [runId, text]);
    // Registered before the enqueue: the worker may publish the end before `add` resolves.
    this.streams.set(runId, res);
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write(`data: ${JSON.stringify({ type: 'run.started', runId })}\n\n`);
    await this.queue.add('step', { runId, a, b } satisfies StepJob, { jobId: runId });
  }
}
