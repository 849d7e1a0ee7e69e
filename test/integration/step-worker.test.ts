import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { createRedisConnection, StepQueue, stepJobId } from '../../services/queue';
import { startStepWorker } from '../../services/queue/step-worker';
import { eventually } from '../support/eventually';
import { freePorts, startRedis, stopRedis } from '../support/local-servers';
import { stack } from '../support/stack';

type SendCommand = Redis['sendCommand'];

/**
 * The step worker on a real Redis. BullMQ's loop, having taken a job, may look for the next one
 * (`moveToActive`) and wait for the answer before it processes the first; ours starts the job
 * first (services/queue/step-worker.ts).
 */
describe('the step worker', () => {
  const prefix = `stepworker${process.pid}`;
  const queueRedis = createRedisConnection(stack().redisUrl);
  const queue = new StepQueue({ connection: queueRedis, prefix });
  afterAll(async () => {
    await queue.close();
    queueRedis.disconnect();
  });

  it('starts each job it takes before its look-up of the next one is answered', async () => {
    const workerRedis = createRedisConnection(stack().redisUrl);
    // For each watched job, the answer to the worker's second job fetch (`moveToActive`, an
    // 11-key script) after the job was enqueued, the one after the fetch that takes it, is held
    // until the job has started, or for 2 s: a worker that waits for that answer before starting
    // the job finds it answered when the job starts.
    let watch: { fetches: number; answered: boolean; started: () => void; start: Promise<void> } | undefined;
    const send = workerRedis.sendCommand.bind(workerRedis) as (...args: unknown[]) => unknown;
    (workerRedis as { sendCommand: SendCommand }).sendCommand = ((command: Parameters<SendCommand>[0], ...rest: unknown[]) => {
      const watched = watch;
      if (watched && command.name === 'evalsha' && String(command.args[1]) === '11' && ++watched.fetches === 2) {
        const answer = command.promise;
        const held = Promise.race([watched.start, new Promise((resolve) => setTimeout(resolve, 2_000))]);
        (command as { promise: Promise<unknown> }).promise = held.then(() => {
          watched.answered = true;
          return answer;
        });
      }
      return send(command, ...rest);
    }) as SendCommand;
    const answeredAtStart = new Map<string, boolean>();
    const stepWorker = startStepWorker({
      connection: workerRedis,
      prefix,
      concurrency: 16,
      lockMs: 30_000,
      log: pino({ level: 'silent' }),
      handlers: {
        'step.bundle': () => Promise.reject(new Error('this test enqueues no bundles')),
        'step.execute': async (payload) => {
          if (!watch) return;
          answeredAtStart.set(payload.nodeId, watch.answered);
          watch.started();
        },
      },
    });
    const runId = '00000000-0000-4000-8000-0000000000aa';
    const worker = await stepWorker.started;
    try {
      await new Promise<void>((resolve) => worker.once('drained', () => resolve()));
      // A first job unwatched: BullMQ takes the first job after its start in another way.
      const first = new Promise((resolve) => worker.once('completed', resolve));
      await queue.enqueue(runId, ['first']);
      await first;
      for (let i = 0; i < 6; i++) {
        // The worker idle again (its look-ups after the last job answered), one job at a time.
        await new Promise((resolve) => setTimeout(resolve, 30));
        let started!: () => void;
        const start = new Promise<void>((resolve) => (started = resolve));
        watch = { fetches: 0, answered: false, started, start };
        await queue.enqueue(runId, [`job${i}`]);
        await eventually(() => answeredAtStart.has(`job${i}`), { what: `job ${i} started`, timeoutMs: 10_000 });
        watch = undefined;
      }
      expect([...answeredAtStart.values()]).toEqual([false, false, false, false, false, false]);
    } finally {
      watch?.started();
      await stepWorker.close();
      workerRedis.disconnect();
    }
  });
});

/**
 * Slots lent while a step waits on a provider: a worker keeps `concurrency` jobs on its own work
 * and takes more only for the jobs that lent their slot back, up to `lendable`.
 */
describe('the step worker lending slots to provider waits', () => {
  const prefix = `stepworkerlend${process.pid}`;
  const queueRedis = createRedisConnection(stack().redisUrl);
  const queue = new StepQueue({ connection: queueRedis, prefix });
  afterAll(async () => {
    await queue.close();
    queueRedis.disconnect();
  });

  /** Runs `jobs` jobs on a worker of 2 slots and `lendable` lendable ones; each job lends its slot when `lends`, then waits until released. */
  async function startedWith(options: { jobs: number; lendable: number; lends: (nodeId: string) => boolean }) {
    const workerRedis = createRedisConnection(stack().redisUrl);
    const started: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const lentAtPeak: number[] = [];
    const stepWorker: ReturnType<typeof startStepWorker> = startStepWorker({
      connection: workerRedis,
      prefix,
      concurrency: 2,
      lendable: options.lendable,
      lockMs: 30_000,
      log: pino({ level: 'silent' }),
      handlers: {
        'step.bundle': () => Promise.reject(new Error('this test enqueues no bundles')),
        'step.execute': async ({ nodeId }) => {
          const back = options.lends(nodeId) ? stepWorker.lendSlot() : null;
          started.push(nodeId);
          lentAtPeak.push(stepWorker.lentSlots);
          await released;
          back?.();
        },
      },
    });
    await stepWorker.started;
    const runId = `00000000-0000-4000-8000-${String(options.jobs).padStart(4, '0')}${String(options.lendable).padStart(8, '0')}`;
    await queue.enqueue(runId, Array.from({ length: options.jobs }, (_, i) => `n${i}`));
    return {
      started,
      lentAtPeak,
      async settle(expected: number) {
        await eventually(() => started.length >= expected, { what: `${expected} jobs started`, timeoutMs: 10_000 });
        // What else the worker takes meanwhile would show within a few fetches.
        await new Promise((resolve) => setTimeout(resolve, 300));
      },
      async stop() {
        release();
        await eventually(() => stepWorker.lentSlots === 0, { what: 'every lent slot returned', timeoutMs: 10_000 });
        await stepWorker.close();
        workerRedis.disconnect();
      },
    };
  }

  it('runs every job that waits on a provider at once, beyond its slots', async () => {
    const run = await startedWith({ jobs: 12, lendable: 100, lends: () => true });
    try {
      await run.settle(12);
      expect(run.started).toHaveLength(12);
      expect(Math.max(...run.lentAtPeak)).toBe(12);
    } finally {
      await run.stop();
    }
  });

  it('keeps jobs that do not wait on a provider to its slots', async () => {
    const run = await startedWith({ jobs: 12, lendable: 100, lends: () => false });
    try {
      await run.settle(2);
      expect(run.started).toHaveLength(2);
    } finally {
      await run.stop();
    }
  });

  it('lends no more than `lendable`: then a waiting job keeps its slot and the worker takes no more', async () => {
    const run = await startedWith({ jobs: 12, lendable: 3, lends: () => true });
    try {
      // 3 lent, then 2 that keep their slots.
      await run.settle(5);
      expect(run.started).toHaveLength(5);
    } finally {
      await run.stop();
    }
  });

  it('mixes: local jobs hold the 2 slots, provider waits go beyond them', async () => {
    const run = await startedWith({ jobs: 12, lendable: 100, lends: (id) => Number(id.slice(1)) % 2 === 0 });
    try {
      // The 6 even jobs lend theirs; the odd ones keep a slot each: 2 of them run.
      await eventually(() => run.started.filter((id) => Number(id.slice(1)) % 2 === 1).length >= 2, { what: 'two local jobs started', timeoutMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const local = run.started.filter((id) => Number(id.slice(1)) % 2 === 1);
      expect(local).toHaveLength(2);
    } finally {
      await run.stop();
    }
  });
});

/**
 * The step queue and worker when Redis refuses them, on a Redis of this file's own (made busy, and its
 * users' rights changed): BullMQ's loop retries a refused fetch at once, and a worker whose start
 * Redis refused fails every fetch without a round trip, a loop that never yields.
 */
describe('the step queue and worker refused by Redis', () => {
  const prefix = 'refused';
  let dir: string;
  let port: number;
  let url: string;
  let admin: Redis;
  let queue: StepQueue;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-step-worker-'));
    [port] = (await freePorts(1)) as [number];
    await startRedis(dir, port);
    url = `redis://127.0.0.1:${port}`;
    admin = createRedisConnection(url);
    queue = new StepQueue({ connection: admin, prefix });
  }, 60_000);

  afterAll(async () => {
    await queue?.close();
    admin?.disconnect();
    await stopRedis(dir, port);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A worker whose log lines at error level are kept, and whose handled jobs are counted by node. */
  function worker(connection: Redis, handle: (nodeId: string) => Promise<void> = async () => undefined) {
    const errors: { msg: string; err?: { message?: string } }[] = [];
    const log = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line) as (typeof errors)[number]) });
    const handled = new Set<string>();
    const stepWorker = startStepWorker({
      connection,
      prefix,
      concurrency: 2,
      lockMs: 2_000,
      log,
      handlers: {
        'step.bundle': () => Promise.reject(new Error('this test enqueues no bundles')),
        'step.execute': async ({ nodeId }) => {
          await handle(nodeId);
          handled.add(nodeId);
        },
      },
    });
    return { stepWorker, errors, handled };
  }

  it('starts another worker while Redis refuses its start, and takes jobs once Redis lets it', async () => {
    // BullMQ's start asks Redis its version (INFO); this user may not, until later.
    await admin.call('ACL', 'SETUSER', 'stepworker', 'reset', 'on', '>pw', '~*', '&*', '+@all', '-info');
    const connection = createRedisConnection(`redis://stepworker:pw@127.0.0.1:${port}`, { enableReadyCheck: false });
    const { stepWorker, errors, handled } = worker(connection);
    try {
      // Timers fire meanwhile (the test goes on): the refused worker's loop does not hold the process.
      await eventually(() => errors.filter((e) => e.msg.startsWith('Redis refused the step worker')).length >= 2, { timeoutMs: 10_000, what: 'two refused starts logged' });
      expect(errors[0]?.err?.message).toMatch(/NOPERM/);
      await admin.call('ACL', 'SETUSER', 'stepworker', '+info');
      await stepWorker.started;
      await queue.enqueue('00000000-0000-4000-8000-0000000000b1', ['after']);
      await eventually(() => handled.has('after'), { timeoutMs: 15_000, what: 'the job enqueued once Redis let the worker start' });
    } finally {
      await stepWorker.close();
      connection.disconnect();
    }
  }, 30_000);

  it('replaces a step queue whose start Redis refused: the next call starts afresh', async () => {
    await admin.call('ACL', 'SETUSER', 'stepqueue', 'reset', 'on', '>pw', '~*', '&*', '+@all', '-info');
    const connection = createRedisConnection(`redis://stepqueue:pw@127.0.0.1:${port}`, { enableReadyCheck: false });
    const refused = new StepQueue({ connection, prefix });
    const runId = '00000000-0000-4000-8000-0000000000b3';
    try {
      await expect(refused.enqueue(runId, ['before'])).rejects.toThrow(/NOPERM/);
      await admin.call('ACL', 'SETUSER', 'stepqueue', '+info');
      await eventually(() => refused.enqueue(runId, ['after']).then(() => true), { what: 'an enqueue once Redis lets the queue start' });
      expect(await queue.queue.getJob(stepJobId(runId, 'after'))).toBeDefined();
    } finally {
      await refused.close();
      connection.disconnect();
    }
  });

  it('waits between fetches Redis refuses while busy with a script, and takes every job once it is done', async () => {
    const connection = createRedisConnection(url);
    const { stepWorker, errors, handled } = worker(connection, () => sleep(5));
    const scripted = createRedisConnection(url);
    try {
      await stepWorker.started;
      const runId = '00000000-0000-4000-8000-0000000000b2';
      const nodes = Array.from({ length: 300 }, (_, i) => `n${i}`);
      await queue.enqueue(runId, nodes);
      // Mid-stream (fetching, not waiting for jobs), Redis runs a script of 2 s, answering every
      // other command BUSY from 100 ms in.
      await eventually(() => handled.size >= 20, { what: 'the worker under way' });
      await admin.config('SET', 'busy-reply-threshold', '100');
      const before = errors.length;
      await scripted.eval(
        "local t = redis.call('TIME'); local s = t[1] * 1000000 + t[2]; repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - s > 2000000; return 1",
        0,
      );
      const busy = errors.slice(before).filter((e) => e.err?.message?.startsWith('BUSY'));
      expect(busy.length).toBeGreaterThan(0);
      // Waiting between refused fetches (50 ms doubling to 1 s): a dozen in 2 s, with the fetches
      // of the two jobs then finishing. Without the waits, hundreds (one per answer of Redis).
      expect(busy.length).toBeLessThan(40);
      await eventually(() => nodes.every((n) => handled.has(n)), { timeoutMs: 30_000, what: 'every job handled after the script' });
    } finally {
      await admin.config('SET', 'busy-reply-threshold', '5000');
      await stepWorker.close();
      connection.disconnect();
      scripted.disconnect();
    }
  }, 60_000);
});
