import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createRedisConnection, StepQueue, type StepQueueOptions } from '../../services/queue';
import { FairDispatch } from '../../services/queue/fair-dispatch';
import { startStepWorker } from '../../services/queue/step-worker';
import { eventually } from '../support/eventually';
import { stack } from '../support/stack';

/**
 * Fair scheduling across organizations (docs/scheduling.md) on a real Redis and real BullMQ
 * workers: jobs wait in a list per organization and enter BullMQ's list round robin, within a
 * window, each organization under its concurrency limit. Orders are asserted, never times.
 */

/** Run ids: one per organization, so that `orgOf` can tell them apart. */
const runOf = (org: string) => `00000000-0000-4000-8000-${org.padStart(12, '0')}`;
const orgOf = async (runId: string) => runId.slice(-1);

let prefixes = 0;

interface Started {
  org: string;
  nodeId: string;
}

/** A queue (fair unless `fair` is null) and a worker of `concurrency` whose jobs each take `jobMs`; records the order jobs start in and the most running at once per organization. */
async function harness(options: { fair: Omit<NonNullable<StepQueueOptions['fair']>, 'orgOf'> | null; concurrency: number; jobMs: number }) {
  const prefix = `fair${process.pid}x${prefixes++}`;
  const redis = createRedisConnection(stack().redisUrl);
  const workerRedis = createRedisConnection(stack().redisUrl);
  const queue = new StepQueue({ connection: redis, prefix, ...(options.fair ? { fair: { ...options.fair, orgOf } } : {}) });
  const started: Started[] = [];
  const running = new Map<string, number>();
  const mostRunning = new Map<string, number>();
  let paused = true;
  const worker = startStepWorker({
    connection: workerRedis,
    prefix,
    concurrency: options.concurrency,
    lockMs: 30_000,
    log: pino({ level: 'silent' }),
    // Failures here are those of a closing test (its connections closed under a release).
    onEnded: (job) => void queue.release((job.data as { orgId?: string }).orgId, job.id!).catch(() => undefined),
    handlers: {
      'step.bundle': () => Promise.reject(new Error('this test enqueues no bundles')),
      'step.execute': async ({ runId, nodeId }) => {
        const org = runId.slice(-1);
        started.push({ org, nodeId });
        running.set(org, (running.get(org) ?? 0) + 1);
        mostRunning.set(org, Math.max(mostRunning.get(org) ?? 0, running.get(org)!));
        await sleep(options.jobMs);
        running.set(org, running.get(org)! - 1);
      },
    },
  });
  const bull = await worker.started;
  // Held until the test has enqueued what it races: every job is in a list before the first is taken.
  await bull.pause();
  return {
    queue,
    started,
    mostRunning,
    async go() {
      if (paused) bull.resume();
      paused = false;
    },
    /** Stops taking jobs, once the jobs under way have ended: nothing starts until `go`. */
    async hold() {
      await bull.pause();
      paused = true;
    },
    async close() {
      await worker.close(true);
      await queue.close();
      redis.disconnect();
      workerRedis.disconnect();
    },
  };
}

const nodes = (org: string, n: number) => Array.from({ length: n }, (_, i) => `${org}${i}`);

describe('fair dispatch of step jobs', () => {
  it('starts another organization\'s step behind at most the window, not behind the flood (FIFO: behind all of it)', async () => {
    const window = 4;
    const concurrency = 2;
    const positions: Record<string, number> = {};
    /** The flood's jobs not started yet when b's step arrived. */
    const waiting: Record<string, number> = {};
    for (const mode of ['fair', 'fifo'] as const) {
      const h = await harness({ fair: mode === 'fair' ? { window, orgLimit: 0 } : null, concurrency, jobMs: 20 });
      try {
        await h.queue.enqueue(runOf('a'), nodes('a', 40));
        await h.go();
        // The flood is under way before the other organization's one step arrives; the workers
        // are held while it does, so that what starts ahead of it is counted from its arrival,
        // however fast this machine runs the flood's jobs.
        await eventually(() => h.started.length >= 3, { what: 'the flood started' });
        await h.hold();
        const before = h.started.length;
        waiting[mode] = 40 - before;
        await h.queue.enqueue(runOf('b'), ['b0']);
        await h.go();
        await eventually(() => h.started.some((s) => s.org === 'b'), { what: "organization b's step started", timeoutMs: 20_000 });
        positions[mode] = h.started.findIndex((s) => s.org === 'b') - before;
      } finally {
        await h.close();
      }
    }
    console.log(`fair dispatch: b's step started after ${positions.fair} of a's ${waiting.fair} waiting (fair, window ${window}, concurrency ${concurrency}), after ${positions.fifo} of ${waiting.fifo} (one FIFO)`);
    // Behind it: what was in BullMQ's list (the window), what the workers had taken and not
    // started yet (up to their concurrency), and a's turn of the ring before b's.
    expect(positions.fair).toBeLessThanOrEqual(window + concurrency + 1);
    expect(waiting.fair).toBeGreaterThan(window + concurrency + 1);
    // The same flood in one FIFO list: the step waits for all of it.
    expect(positions.fifo).toBe(waiting.fifo);
  });

  it('shares the workers among organizations with work waiting', async () => {
    const h = await harness({ fair: { window: 3, orgLimit: 0 }, concurrency: 3, jobMs: 2 });
    try {
      for (const org of ['a', 'b', 'c']) await h.queue.enqueue(runOf(org), nodes(org, 30));
      await h.go();
      await eventually(() => h.started.length === 90, { what: 'every job started', timeoutMs: 30_000 });
      // After the first window (a's three, offered before b and c arrived), a third each (the
      // workers may start two neighbours in either order: the exact turns are the next test's).
      const counts = { a: 0, b: 0, c: 0 } as Record<string, number>;
      for (const { org } of h.started.slice(3, 63)) counts[org]!++;
      for (const org of ['a', 'b', 'c']) expect(Math.abs(counts[org]! - 20)).toBeLessThanOrEqual(2);
    } finally {
      await h.close();
    }
  });

  it('dispatches organizations with work waiting in strict turns', async () => {
    const redis = createRedisConnection(stack().redisUrl);
    const prefix = `fairturns${process.pid}`;
    const fair = new FairDispatch({ redis, prefix, bullWaitKey: `${prefix}:steps:wait`, bullJobPrefix: `${prefix}:steps:`, window: 3, orgLimit: 0 });
    const jobs = (org: string) => Array.from({ length: 10 }, (_, i) => ({ id: `${org}${i}`, name: 'step.execute', data: { runId: runOf(org), nodeId: `${org}${i}` } }));
    try {
      const order: string[] = [];
      // Each dispatched job is taken by a worker at once (nothing stays in BullMQ's list), and ends.
      const dispatched = async (out: Awaited<ReturnType<FairDispatch['offer']>>) => {
        await fair.added(out.map((j) => j.id));
        order.push(...out.map((j) => j.id));
        return out;
      };
      // a's first window is on its way to BullMQ while b and c arrive: they wait their turn.
      const first = await fair.offer('a', jobs('a'));
      expect(await fair.offer('b', jobs('b'))).toEqual([]);
      expect(await fair.offer('c', jobs('c'))).toEqual([]);
      await dispatched(first);
      for (let i = 0; order.length < 30; i++) await dispatched(await fair.release([{ org: order[i]!.slice(0, 1), id: order[i]! }]));
      // The first window is a's (alone then); from there a, b, c in turn, each oldest first.
      expect(order.slice(0, 3)).toEqual(['a0', 'a1', 'a2']);
      expect(order.slice(3, 12)).toEqual(['a3', 'b0', 'c0', 'a4', 'b1', 'c1', 'a5', 'b2', 'c2']);
      expect(await fair.waiting()).toEqual({ jobs: 0, organizations: 0 });
    } finally {
      redis.disconnect();
    }
  });

  it("holds an organization to its concurrency limit while others use the rest", async () => {
    const h = await harness({ fair: { window: 8, orgLimit: 2 }, concurrency: 6, jobMs: 20 });
    try {
      await h.queue.enqueue(runOf('a'), nodes('a', 20));
      await h.queue.enqueue(runOf('b'), nodes('b', 20));
      await h.queue.enqueue(runOf('c'), nodes('c', 4));
      await h.go();
      await eventually(() => h.started.length === 44, { what: 'every job started', timeoutMs: 30_000 });
      // Six worker slots, two per organization: each reaches its limit, none passes it.
      expect(Object.fromEntries(h.mostRunning)).toEqual({ a: 2, b: 2, c: 2 });
      expect((await h.queue.counts()).held).toBe(0);
    } finally {
      await h.close();
    }
  });

  it('does not enqueue again a step that waits for its turn (the reaper sees it alive)', async () => {
    const h = await harness({ fair: { window: 1, orgLimit: 0 }, concurrency: 1, jobMs: 1 });
    try {
      await h.queue.enqueue(runOf('a'), ['a0', 'a1', 'a2']);
      // a0 is in BullMQ's list (the window is one), a1 and a2 wait their turn.
      expect((await h.queue.counts()).held).toBe(2);
      await expect(h.queue.requeue(runOf('a'), ['a1', 'a2'])).resolves.toEqual([]);
      // An enqueue of a waiting step is a no-op, as BullMQ's own add of a waiting job is.
      await h.queue.enqueue(runOf('a'), ['a1']);
      expect((await h.queue.counts()).held).toBe(2);
      await h.go();
      await eventually(() => h.started.length === 3, { what: 'every job started' });
      await sleep(50);
      expect(h.started.map((s) => s.nodeId)).toEqual(['a0', 'a1', 'a2']);
    } finally {
      await h.close();
    }
  });
});

describe("organizations' own limits", () => {
  it('holds an organization to its own limit, the others to the default', async () => {
    const redis = createRedisConnection(stack().redisUrl);
    const prefix = `fairown${process.pid}`;
    const fair = new FairDispatch({ redis, prefix, bullWaitKey: `${prefix}:steps:wait`, bullJobPrefix: `${prefix}:steps:`, window: 100, orgLimit: 3 });
    const jobs = (org: string) => Array.from({ length: 5 }, (_, i) => ({ id: `${org}${i}`, name: 'step.execute', data: { runId: runOf(org), nodeId: `${org}${i}` } }));
    try {
      await fair.setLimits(new Map([['a', 1], ['c', 0]]));
      expect((await fair.offer('a', jobs('a'))).map((j) => j.id)).toEqual(['a0']);
      expect((await fair.offer('b', jobs('b'))).map((j) => j.id)).toEqual(['b0', 'b1', 'b2']);
      // 0: no limit of its own, whatever the default.
      expect(await fair.offer('c', jobs('c'))).toHaveLength(5);
      // Raised: the next release (or reconciling pump) lets more in.
      await fair.setLimits(new Map([['a', 2]]));
      expect((await fair.release([{ org: 'a', id: 'a0' }])).map((j) => j.id)).toEqual(['a1', 'a2']);
    } finally {
      redis.disconnect();
    }
  });
});

describe('fair dispatch when a release is lost', () => {
  it('frees the slots of jobs that ended without their release once the reconciling pump looks', async () => {
    const redis = createRedisConnection(stack().redisUrl);
    const prefix = `fairlost${process.pid}`;
    const bullJobPrefix = `${prefix}:steps:`;
    const fair = new FairDispatch({ redis, prefix, bullWaitKey: `${prefix}:steps:wait`, bullJobPrefix, window: 10, orgLimit: 1, graceMs: 50 });
    const job = (id: string) => ({ id, name: 'step.execute', data: { runId: runOf('a'), nodeId: id } });
    try {
      // j1 is dispatched; its worker is killed before the release (no BullMQ hash left for it either).
      expect((await fair.offer('a', [job('j1'), job('j2')])).map((j) => j.id)).toEqual(['j1']);
      expect(await fair.pump(false)).toEqual([]);
      // A job BullMQ still has, unfinished, keeps its slot however old.
      await redis.hset(`${bullJobPrefix}j1`, 'name', 'step.execute');
      await sleep(100);
      expect(await fair.pump(true)).toEqual([]);
      // Finished (BullMQ kept the failed job's hash): the slot is free, and j2 goes.
      await redis.hset(`${bullJobPrefix}j1`, 'finishedOn', String(Date.now()));
      expect((await fair.pump(false)).map((j) => j.id)).toEqual([]);
      expect((await fair.pump(true)).map((j) => j.id)).toEqual(['j2']);
      expect(await fair.waiting()).toEqual({ jobs: 0, organizations: 0 });
    } finally {
      redis.disconnect();
    }
  });
});

describe('the batch lane beside interactive work', () => {
  it('gives batch lanes at most their share of dispatched jobs while interactive work is under way, and all the room once it is quiet', async () => {
    const redis = createRedisConnection(stack().redisUrl);
    const prefix = `fairshare${process.pid}`;
    const quietMs = 300;
    const fair = new FairDispatch({ redis, prefix, bullWaitKey: `${prefix}:steps:wait`, bullJobPrefix: `${prefix}:steps:`, window: 100, orgLimit: 0, batchSlotsWhileInteractive: 2, interactiveQuietMs: quietMs });
    const jobs = (prefixOfId: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefixOfId}${i}`, name: 'step.execute', data: { runId: runOf('a'), nodeId: `${prefixOfId}${i}` } }));
    const ids = (out: Awaited<ReturnType<FairDispatch['offer']>>) => out.map((j) => j.id);
    try {
      expect(await fair.batchLane('~b:a')).toEqual({ waiting: 0, interactiveBusy: false });
      // An interactive step is dispatched: interactive work is under way.
      expect(ids(await fair.offer('a', jobs('i', 1)))).toEqual(['i0']);
      expect(ids(await fair.offer('~b:a', jobs('b', 10)))).toEqual(['b0', 'b1']);
      // Another organization's batch shares the same two slots.
      expect(await fair.offer('~b:c', jobs('c', 3))).toEqual([]);
      expect(await fair.batchLane('~b:a')).toEqual({ waiting: 8, interactiveBusy: true });
      // One batch job ends: one more goes (a's turn: it was in the ring before c).
      expect(ids(await fair.release([{ org: '~b:a', id: 'b0' }]))).toEqual(['b2']);
      expect(ids(await fair.release([{ org: 'a', id: 'i0' }]))).toEqual([]);
      // Quiet: the next dispatch gives the batch lanes all the room.
      await sleep(quietMs + 50);
      expect(await fair.batchLane('~b:a')).toEqual({ waiting: 7, interactiveBusy: false });
      expect(await fair.batchLane('~b:c')).toEqual({ waiting: 3, interactiveBusy: false });
      expect(ids(await fair.release([{ org: '~b:a', id: 'b1' }]))).toEqual(['c0', 'b3', 'c1', 'b4', 'c2', 'b5', 'b6', 'b7', 'b8', 'b9']);
    } finally {
      redis.disconnect();
    }
  });

  it('spaces batch dispatches while interactive work is under way', async () => {
    const redis = createRedisConnection(stack().redisUrl);
    const prefix = `fairgap${process.pid}`;
    const gapMs = 200;
    const fair = new FairDispatch({ redis, prefix, bullWaitKey: `${prefix}:steps:wait`, bullJobPrefix: `${prefix}:steps:`, window: 100, orgLimit: 0, batchSlotsWhileInteractive: 5, interactiveQuietMs: 10_000, batchGapWhileInteractiveMs: gapMs });
    const jobs = (prefixOfId: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefixOfId}${i}`, name: 'step.execute', data: { runId: runOf('a'), nodeId: `${prefixOfId}${i}` } }));
    const ids = (out: Awaited<ReturnType<FairDispatch['offer']>>) => out.map((j) => j.id);
    try {
      expect(ids(await fair.offer('a', jobs('i', 1)))).toEqual(['i0']);
      // Five slots, but one job per gap.
      expect(ids(await fair.offer('~b:a', jobs('b', 10)))).toEqual(['b0']);
      expect(await fair.pump(false)).toEqual([]);
      await sleep(gapMs + 50);
      expect(ids(await fair.pump(false))).toEqual(['b1']);
      expect(await fair.pump(false)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('spaces batch dispatches with no bound on their number (BATCH_SLOTS_WHILE_INTERACTIVE=0), and bounds their number with no gap', async () => {
    const redis = createRedisConnection(stack().redisUrl);
    const jobs = (prefixOfId: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefixOfId}${i}`, name: 'step.execute', data: { runId: runOf('a'), nodeId: `${prefixOfId}${i}` } }));
    const ids = (out: Awaited<ReturnType<FairDispatch['offer']>>) => out.map((j) => j.id);
    const dispatch = (name: string, slots: number, gapMs: number) => {
      const prefix = `fair${name}${process.pid}`;
      return new FairDispatch({ redis, prefix, bullWaitKey: `${prefix}:steps:wait`, bullJobPrefix: `${prefix}:steps:`, window: 100, orgLimit: 0, batchSlotsWhileInteractive: slots, interactiveQuietMs: 10_000, batchGapWhileInteractiveMs: gapMs });
    };
    try {
      const spacedOnly = dispatch('gaponly', 0, 10_000);
      expect(ids(await spacedOnly.offer('a', jobs('i', 1)))).toEqual(['i0']);
      expect(ids(await spacedOnly.offer('~b:a', jobs('b', 5)))).toEqual(['b0']);
      expect(await spacedOnly.pump(false)).toEqual([]);
      const boundedOnly = dispatch('slotsonly', 3, 0);
      expect(ids(await boundedOnly.offer('a', jobs('i', 1)))).toEqual(['i0']);
      expect(ids(await boundedOnly.offer('~b:a', jobs('b', 5)))).toEqual(['b0', 'b1', 'b2']);
      const neither = dispatch('neither', 0, 0);
      expect(ids(await neither.offer('a', jobs('i', 1)))).toEqual(['i0']);
      expect(ids(await neither.offer('~b:a', jobs('b', 5)))).toEqual(['b0', 'b1', 'b2', 'b3', 'b4']);
    } finally {
      redis.disconnect();
    }
  });
});
