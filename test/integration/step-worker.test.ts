import type { Redis } from 'ioredis';
import pino from 'pino';
import { createRedisConnection, StepQueue } from '../../services/queue';
import { startStepWorker } from '../../services/queue/step-worker';
import { eventually } from '../support/eventually';
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
    const worker = startStepWorker({
      connection: workerRedis,
      prefix,
      concurrency: 16,
      lockMs: 30_000,
      log: pino({ level: 'silent' }),
      handlers: {
        'step.execute': async (payload) => {
          if (!watch) return;
          answeredAtStart.set(payload.nodeId, watch.answered);
          watch.started();
        },
      },
    });
    const runId = '00000000-0000-4000-8000-0000000000aa';
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
      await worker.close();
      workerRedis.disconnect();
    }
  });
});
