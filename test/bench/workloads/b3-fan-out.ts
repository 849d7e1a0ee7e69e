import { performance } from 'node:perf_hooks';
import { FlowProducer, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedisConnection, STEP_JOB_OPTIONS } from '../../../services/queue';
import { withPeer, type Workload } from '../support/context';
import { sequential } from '../support/load';
import { PEER_WORKER_SETTINGS } from '../support/raw-bullmq';
import { atMost, type Row } from '../support/report';
import { runOnce } from '../support/service-client';

/** Branches of the fan-out. */
const WIDTH = 1000;
/** The peer's worker concurrency: the same as our shared service's WORKER_CONCURRENCY. */
const CONCURRENCY = 16;
/**
 * Runs before the measured ones, on both sides: a 1,000-wide run takes several to bring the code
 * paths of either side to steady state (JIT), as a long-running service is; with one, the
 * measured runs still compile (ours 200-220 ms after one, 110-150 ms after five, 2026-11-27).
 */
const WARMUP = 5;
/** What the source node gives (1 + 1); branch i gives SOURCE + i. */
const SOURCE = 2;
/** Σ (SOURCE + i) over the branches: what the peer's parent must arrive at. */
const EXPECTED_SUM = WIDTH * SOURCE + (WIDTH * (WIDTH - 1)) / 2;

/**
 * Ours: one source step, 1,000 `math-add` steps each reading it, joined by the run itself.
 *
 * Why the join is one `output` node per branch and not a node: no platform node takes 1,000
 * references. A list port (`text-concat`'s `texts`) takes one reference or a literal list, and
 * `${...}` inside a literal list is plain text (docs/workflow-format.md, References), so a single
 * join node cannot read the branches. Output nodes are not steps: the run completes once every
 * step they read has, and run.completed carries all 1,000 values; that is the join, as the
 * peer's parent job is (it runs once all its children are done and reads their values). The sum
 * is not taken (runOnce checks each of the 1,000 values instead). A tree of `math-add` joins would
 * add 999 steps (two per branch) that the peer does not have.
 */
function fanOutBody(): string {
  const branches = Array.from({ length: WIDTH }, (_, i) => ({ id: `b${i}`, uses: 'math-add', inputs: { a: '${src.result}', b: i } }));
  const outputs = Array.from({ length: WIDTH }, (_, i) => ({ id: `o${i}`, uses: 'output', inputs: { value: `\${b${i}.result}` } }));
  return JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'src', uses: 'math-add', inputs: { a: 1, b: 1 } }, ...branches, ...outputs] } });
}

/** run.completed's outputs: every branch's value (SOURCE + i); runOnce compares them all. */
const EXPECTED_OUTPUTS = Object.fromEntries(Array.from({ length: WIDTH }, (_, i) => [`o${i}`, { kind: 'float', value: SOURCE + i }]));

/**
 * The peer: a BullMQ FlowProducer adds one parent with 1,000 children (each `a + b`) on the same
 * Redis; one Worker of concurrency 16 processes the children, then the parent, which sums
 * getChildrenValues(). Timed from the add to the parent's completion (the worker's `completed`
 * event, in this process).
 */
class FlowPeer {
  private readonly waiters = new Map<string, (sum: number) => void>();
  private counter = 0;

  private constructor(
    private readonly connections: Redis[],
    private readonly flows: FlowProducer,
    private readonly worker: Worker,
  ) {}

  static async start(redisUrl: string, onFailure: (err: unknown) => void): Promise<FlowPeer> {
    const prefix = 'svcflow';
    const [producerConnection, workerConnection] = [createRedisConnection(redisUrl), createRedisConnection(redisUrl)];
    const flows = new FlowProducer({ connection: producerConnection, prefix });
    const processor = async (job: Job): Promise<number> => {
      if (job.name === 'child') {
        const { a, b } = job.data as { a: number; b: number };
        return a + b;
      }
      const values = Object.values(await job.getChildrenValues<number>());
      if (values.length !== WIDTH) throw new Error(`parent ${job.id} read ${values.length} children values, expected ${WIDTH}`);
      return values.reduce((sum, v) => sum + v, 0);
    };
    // The step worker's settings (as the raw BullMQ peer of B1/B2 has them).
    const worker = new Worker('fan', processor, { connection: workerConnection, prefix, concurrency: CONCURRENCY, ...PEER_WORKER_SETTINGS });
    const peer = new FlowPeer([producerConnection, workerConnection], flows, worker);
    worker.on('completed', (job, result: number) => {
      if (job.name !== 'parent') return;
      const waiter = peer.waiters.get(job.id!);
      peer.waiters.delete(job.id!);
      waiter?.(result);
    });
    worker.on('failed', (job, err) => onFailure(new Error(`flow job ${job?.id}: ${err.message}`)));
    worker.on('error', (err) => onFailure(err));
    await worker.waitUntilReady();
    return peer;
  }

  /** One flow, add → parent completed; resolves to its milliseconds. */
  async once(): Promise<number> {
    const id = `flow_${++this.counter}`;
    const done = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new Error(`flow ${id}: the parent did not complete within 60 s`));
      }, 60_000);
      this.waiters.set(id, (sum) => {
        clearTimeout(timer);
        resolve(sum);
      });
    });
    done.catch(() => undefined);
    const started = performance.now();
    await this.flows.add({
      name: 'parent',
      queueName: 'fan',
      opts: { ...STEP_JOB_OPTIONS, jobId: id },
      children: Array.from({ length: WIDTH }, (_, i) => ({ name: 'child', queueName: 'fan', data: { a: SOURCE, b: i }, opts: { ...STEP_JOB_OPTIONS, jobId: `${id}_${i}` } })),
    });
    const sum = await done;
    const elapsed = performance.now() - started;
    if (sum !== EXPECTED_SUM) throw new Error(`flow ${id}: the parent summed ${sum}, expected ${EXPECTED_SUM}`);
    return elapsed;
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.flows.close();
    await Promise.all(this.connections.map((c) => c.quit()));
  }
}

export const b3: Workload = {
  id: 'B3',
  title: `${WIDTH.toLocaleString('en')}-wide fan-out + join (peer: BullMQ FlowProducer, ${WIDTH} children, one parent)`,
  async run(ctx) {
    const runs = ctx.scale(10, 3);
    const service = await ctx.service();
    const body = fanOutBody();
    const ours = await sequential(ctx, 'B3 ours', WARMUP, runs, () => runOnce(service, body, EXPECTED_OUTPUTS));
    ctx.say(`ours (${WIDTH + 1} steps, POST → [DONE]): ${ours.summary()}`);

    const flows = await withPeer(FlowPeer.start(ctx.stack.redisUrl, (err) => ctx.fail('B3 peer', err)), (peer) => sequential(ctx, 'B3 peer', WARMUP, runs, () => peer.once()));
    ctx.say(`BullMQ FlowProducer (${WIDTH} children + parent): ${flows.summary()}`);

    const oursMs = ours.percentile(50);
    const peerMs = flows.percentile(50);
    return [
      {
        id: 'B3',
        figure: `${WIDTH}-wide fan-out + join, one run, median of ${runs}`,
        ours: oursMs,
        unit: 'ms',
        kind: 'time',
        peer: { name: 'BullMQ FlowProducer', value: peerMs },
        goal: atMost('≤ 1.0×', oursMs / peerMs, 1),
      } satisfies Row,
    ];
  },
};
