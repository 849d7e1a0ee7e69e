import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { RunEvent } from '../../services/contract';
import { ChannelFanout, createRedisConnection, createRedisSubscriber, RunEventBus, runEventKeys, type SequencedEvent } from '../../services/queue';
import { MountTallyAppender } from '../../services/queue/mount-tally-appender';
import { followRunEvents, type StoredRun } from '../../services/runs';
import { eventually } from '../support/eventually';
import { eventsOf } from '../support/run-event-iteration';
import { startFaultProxy } from '../support/fault-proxy';
import { stack, uniqueName } from '../support/stack';

const prefix = uniqueName('bus');
/** Every run's log opens with it (seq 1), whoever appends first: the starter or a worker. */
const runStarted = (runId: string): RunEvent => ({ type: 'run.started', runId });
const progress = (message: string): RunEvent => ({ type: 'step.progress', nodeId: 'n1', message });
const stepStarted: RunEvent = { type: 'step.started', nodeId: 'n1' };
const completed: RunEvent = { type: 'run.completed', outputs: {} };
const failed: RunEvent = { type: 'run.failed', error: { code: 'step_failed', message: 'boom' } };

/**
 * Records the channels of each UNSUBSCRIBE `redis` sends: the method is watched, not replaced
 * (what the fan-out asks of the connection still goes out); `restore` puts it back.
 */
function watchUnsubscribes(redis: Redis): { sent: string[][]; restore(): void } {
  const sent: string[][] = [];
  const unsubscribe = redis.unsubscribe.bind(redis);
  redis.unsubscribe = ((...channels: string[]) => {
    sent.push(channels);
    return unsubscribe(...channels);
  }) as typeof redis.unsubscribe;
  return { sent, restore: () => void (redis.unsubscribe = unsubscribe) };
}

async function collect(stream: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const items: SequencedEvent[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

const seqs = (items: SequencedEvent[]) => items.map((item) => item.seq);
const events = (items: SequencedEvent[]) => items.map((item) => item.event);
const runStartedCount = (items: SequencedEvent[]) => items.filter((item) => item.event.type === 'run.started').length;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Every log entry carries the time of its append (Redis' clock, epoch ms). */
const appendedAt = expect.any(Number) as number;
describe('the run event bus', () => {
  const connections: Redis[] = [];
  const connect = (): Redis => {
    const redis = createRedisConnection(stack().redisUrl);
    redis.on('error', () => undefined); // CLIENT KILL makes the killed one report its reset
    connections.push(redis);
    return redis;
  };
  let admin: Redis;
  let subscriber: Redis;
  let subscriberId: number;
  let bus: RunEventBus;

  const numsub = async (runId: string): Promise<number> => {
    const reply = (await admin.pubsub('NUMSUB', runEventKeys(prefix, runId).channel)) as [string, number];
    return Number(reply[1]);
  };
  const clientInfo = async (id: number): Promise<string> => String(await admin.client('LIST', 'ID', String(id)));
  const subscribedOnRedis = (runId: string) => eventually(async () => (await numsub(runId)) === 1, { what: `the subscription of ${runId}` });
  // A channel left is unsubscribed with the next batch, within the fan-out's leave delay (50 ms).
  const unsubscribedOnRedis = (runId: string) => eventually(async () => (await numsub(runId)) === 0, { what: `the UNSUBSCRIBE of ${runId}` });
  const noSubscriptionsLeft = () => eventually(async () => (await clientInfo(subscriberId)).includes(' sub=0 '), { what: 'no subscription left on the connection' });

  beforeAll(async () => {
    admin = connect();
    subscriber = connect();
    subscriberId = Number(await subscriber.client('ID'));
    bus = new RunEventBus({ redis: connect(), subscriber, prefix });
  });

  afterAll(async () => {
    await bus.close();
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await admin.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    for (const redis of connections) redis.disconnect();
  });

  afterEach(() => {
    expect(bus.stats()).toEqual({ streams: 0, channels: 0, listeners: 0 });
  });

  it('numbers 200 concurrent appends from 5 connections 2..201 after one run.started without gaps, and every subscriber sees one order', async () => {
    const runId = randomUUID();
    const appenders = Array.from({ length: 5 }, () => new RunEventBus({ redis: connect(), prefix }));
    const streams = Array.from({ length: 3 }, () => collect(eventsOf(bus, runId)));
    await subscribedOnRedis(runId);

    const results = await Promise.all(
      range(0, 199).map(async (i) => ({ seq: await appenders[i % 5]!.append(runId, progress(`e${i}`)), message: `e${i}` })),
    );
    // Whichever append came first opened the log with run.started, exactly once.
    expect(results.map((r) => r.seq).sort((a, b) => a - b)).toEqual(range(2, 201));
    expect(await appenders[0]!.append(runId, completed)).toBe(202);

    const seen = await Promise.all(streams);
    const bySeq = new Map(results.map((r) => [r.seq, r.message]));
    for (const items of seen) {
      expect(seqs(items)).toEqual(range(1, 202));
      expect(items).toEqual(seen[0]);
      expect(items[0]!.event).toEqual(runStarted(runId));
      expect(runStartedCount(items)).toBe(1);
      for (const { seq, event } of items.slice(1, 201)) expect(event).toEqual(progress(bySeq.get(seq)!));
      expect(items[201]!.event).toEqual(completed);
    }
    expect(await bus.read(runId)).toEqual(seen[0]);
    expect(await bus.lastSeq(runId)).toBe(202);
    await Promise.all(appenders.map((appender) => appender.close()));
  });

  it('gives a late subscriber the logged events, then the live ones, once each, and ends after the terminal event', async () => {
    const runId = randomUUID();
    for (let i = 1; i <= 10; i++) await bus.append(runId, progress(`e${i}`)); // seqs 2..11
    const items: SequencedEvent[] = [];
    for await (const item of eventsOf(bus, runId)) {
      items.push(item);
      if (item.seq === 11) {
        for (let i = 11; i <= 15; i++) await bus.append(runId, progress(`e${i}`));
        await bus.append(runId, failed);
        await bus.append(runId, progress('after the end'));
      }
    }
    expect(seqs(items)).toEqual(range(1, 17));
    expect(items[0]!.event).toEqual(runStarted(runId));
    expect(events(items.slice(1, 16))).toEqual(range(1, 15).map((i) => progress(`e${i}`)));
    expect(items[16]!.event).toEqual(failed);
    await unsubscribedOnRedis(runId);
  });

  it('resumes after a seq (Last-Event-ID) with exactly the events the dropped client missed', async () => {
    const runId = randomUUID();
    await bus.append(runId, runStarted(runId));
    for (let i = 2; i <= 6; i++) await bus.append(runId, progress(`e${i}`));
    const first: SequencedEvent[] = [];
    for await (const item of eventsOf(bus, runId)) {
      first.push(item);
      if (item.seq === 4) break; // the connection drops after id 4
    }
    for (let i = 7; i <= 9; i++) await bus.append(runId, progress(`e${i}`));
    const resumed = collect(eventsOf(bus, runId, { afterSeq: 4 }));
    await subscribedOnRedis(runId);
    await bus.append(runId, completed);
    expect(seqs(first)).toEqual(range(1, 4));
    expect(events(first)).toEqual([runStarted(runId), progress('e2'), progress('e3'), progress('e4')]);
    const rest = await resumed;
    expect(seqs(rest)).toEqual(range(5, 10));
    expect(events(rest)).toEqual([...range(5, 9).map((i) => progress(`e${i}`)), completed]);
    expect(seqs(await collect(eventsOf(bus, runId, { afterSeq: 10 })))).toEqual([]);
  });

  it('shows a subscriber that starts while appends are in flight no gap and no duplicate (100 races)', async () => {
    const appenders = Array.from({ length: 3 }, () => new RunEventBus({ redis: connect(), prefix }));
    for (let round = 0; round < 100; round++) {
      const runId = randomUUID();
      const appending = (async () => {
        for (let i = 0; i < 20; i++) {
          await Promise.all(appenders.map((appender, a) => appender.append(runId, progress(`${i}.${a}`))));
        }
        return appenders[round % 3]!.append(runId, completed);
      })();
      // Start somewhere inside the appends: before the first, in the middle, near the end.
      await new Promise((resolve) => setTimeout(resolve, round % 7));
      const items = await collect(eventsOf(bus, runId, { afterSeq: round % 2 === 0 ? 0 : 3 }));
      const last = await appending;
      expect(last).toBe(62); // run.started, 60 progress events, the terminal event
      expect(seqs(items)).toEqual(range(round % 2 === 0 ? 1 : 4, last));
      if (round % 2 === 0) expect(items[0]!.event).toEqual(runStarted(runId));
      expect(runStartedCount(items)).toBe(round % 2 === 0 ? 1 : 0);
    }
    await Promise.all(appenders.map((appender) => appender.close()));
  });

  it('fills a gap between live messages from the log', async () => {
    const runId = randomUUID();
    const { log } = runEventKeys(prefix, runId);
    expect(await bus.append(runId, progress('e1'))).toBe(2);
    const items: SequencedEvent[] = [];
    for await (const item of eventsOf(bus, runId)) {
      items.push(item);
      if (item.seq === 2) {
        await subscribedOnRedis(runId);
        // Logged but never published (as if the message was lost): only the log can deliver them.
        await admin.rpush(log, JSON.stringify({ seq: 3, event: progress('e2') }), JSON.stringify({ seq: 4, event: progress('e3') }));
        await bus.append(runId, completed);
      }
    }
    expect(seqs(items)).toEqual([1, 2, 3, 4, 5]);
    expect(events(items)).toEqual([runStarted(runId), progress('e1'), progress('e2'), progress('e3'), completed]);
  });

  it('serves 100 concurrent streams of 100 runs over one subscriber connection and leaves no subscription behind', async () => {
    const runIds = Array.from({ length: 100 }, () => randomUUID());
    const streams = runIds.map((runId) => collect(eventsOf(bus, runId)));
    await eventually(async () => (await clientInfo(subscriberId)).includes(' sub=100 '), { what: '100 subscriptions on the one connection' });
    expect(bus.stats()).toEqual({ streams: 100, channels: 100, listeners: 100 });
    await Promise.all(runIds.map(async (runId) => {
      await bus.append(runId, progress('only'));
      await bus.append(runId, completed);
    }));
    for (const [i, items] of (await Promise.all(streams)).entries()) {
      expect(events(items)).toEqual([runStarted(runIds[i]!), progress('only'), completed]);
      expect(seqs(items)).toEqual([1, 2, 3]);
    }
    await noSubscriptionsLeft();
    for (const runId of runIds) await unsubscribedOnRedis(runId);
  });

  it('unsubscribes when the consumer breaks out early, and keeps the channel while another stream of the run lives', async () => {
    const runId = randomUUID();
    for (let i = 1; i <= 3; i++) await bus.append(runId, progress(`e${i}`));
    const other = collect(eventsOf(bus, runId));
    for await (const item of eventsOf(bus, runId)) {
      expect(item).toEqual({ seq: 1, at: appendedAt, event: runStarted(runId) });
      break;
    }
    expect(await numsub(runId)).toBe(1);
    expect(bus.stats()).toEqual({ streams: 1, channels: 1, listeners: 1 });
    await bus.append(runId, completed);
    expect(seqs(await other)).toEqual([1, 2, 3, 4, 5]);
    await unsubscribedOnRedis(runId);
  });

  it('unsubscribes the channels of streams that end together with one UNSUBSCRIBE', async () => {
    const runIds = range(1, 20).map(() => randomUUID());
    const streams = runIds.map((runId) => collect(eventsOf(bus, runId)));
    for (const runId of runIds) await subscribedOnRedis(runId);
    const { sent, restore } = watchUnsubscribes(subscriber);
    try {
      await Promise.all(runIds.map((runId) => bus.append(runId, completed)));
      await Promise.all(streams);
      for (const runId of runIds) await unsubscribedOnRedis(runId);
    } finally {
      restore();
    }
    // Each channel once; how many commands depends on how close together the streams ended (the
    // machine's speed), so the batching itself is asserted on the fan-out below.
    expect(sent.flat().sort()).toEqual(runIds.map((runId) => runEventKeys(prefix, runId).channel).sort());
  });

  it('sends one UNSUBSCRIBE for the channels left within one leave delay', async () => {
    const own = connect();
    const fanout = new ChannelFanout(own);
    const channels = range(1, 20).map(() => runEventKeys(prefix, randomUUID()).channel);
    const listener = { message: (): void => undefined, resubscribed: (): void => undefined };
    for (const channel of channels) await fanout.add(channel, listener);
    const { sent } = watchUnsubscribes(own);
    // All twenty leave in one turn: one timer, one command, however slow the machine.
    for (const channel of channels) void fanout.remove(channel, listener);
    await eventually(async () => Number(((await admin.pubsub('NUMSUB', ...channels)) as (string | number)[]).filter((_, i) => i % 2 === 1).reduce((a, b) => Number(a) + Number(b), 0)) === 0, { what: 'the twenty channels unsubscribed' });
    expect(sent).toEqual([channels]);
    await fanout.close();
  });

  it('keeps a channel left and wanted again before its UNSUBSCRIBE went out', async () => {
    const runId = randomUUID();
    await bus.append(runId, progress('e1'));
    for await (const item of eventsOf(bus, runId)) {
      expect(item.seq).toBe(1);
      break;
    }
    // Within the leave delay: the channel is still subscribed, its UNSUBSCRIBE queued.
    const again = collect(eventsOf(bus, runId, { afterSeq: 2 }));
    await subscribedOnRedis(runId);
    // Well past the delay: the queued UNSUBSCRIBE must not have taken the new stream's channel.
    await sleep(200);
    expect(await numsub(runId)).toBe(1);
    await bus.append(runId, completed);
    expect(seqs(await again)).toEqual([3]);
    await unsubscribedOnRedis(runId);
  });

  it('keeps subscriptions right when streams of one run come and go faster than Redis answers', async () => {
    const runId = randomUUID();
    const churn = Array.from({ length: 200 }, async (_, i) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), i % 4);
      if (i % 10 === 0) await bus.append(runId, progress(`e${i}`));
      const items = await collect(eventsOf(bus, runId, { signal: controller.signal }));
      expect(seqs(items)).toEqual(range(1, items.length));
    });
    await Promise.all(churn);
    await unsubscribedOnRedis(runId);
    // The channel must still work live after all that.
    const appended = await bus.lastSeq(runId);
    expect(appended).toBe(21); // run.started and 20 progress events
    expect(runStartedCount(await bus.read(runId))).toBe(1);
    const last = collect(eventsOf(bus, runId, { afterSeq: appended }));
    await subscribedOnRedis(runId);
    await bus.append(runId, completed);
    expect(seqs(await last)).toEqual([appended + 1]);
    await unsubscribedOnRedis(runId);
    await noSubscriptionsLeft();
  });

  it('ends the iteration without an error when the signal aborts', async () => {
    const runId = randomUUID();
    await bus.append(runId, progress('e1'));
    const controller = new AbortController();
    const items: SequencedEvent[] = [];
    const done = (async () => {
      for await (const item of eventsOf(bus, runId, { signal: controller.signal })) items.push(item);
    })();
    await eventually(() => items.length === 2, { what: 'the first two events' });
    controller.abort();
    await done;
    expect(items).toEqual([{ seq: 1, at: appendedAt, event: runStarted(runId) }, { seq: 2, at: appendedAt, event: progress('e1') }]);
    await unsubscribedOnRedis(runId);
    expect(await collect(eventsOf(bus, runId, { signal: controller.signal }))).toEqual([]);
  });

  it('waits on a run without a log, which lastSeq reports as 0', async () => {
    const runId = randomUUID();
    expect(await bus.lastSeq(runId)).toBe(0);
    expect(await bus.read(runId)).toEqual([]);
    const controller = new AbortController();
    const stream = collect(eventsOf(bus, runId, { signal: controller.signal }));
    await subscribedOnRedis(runId);
    setTimeout(() => controller.abort(), 50);
    expect(await stream).toEqual([]);
  });

  it('keeps the log with an expiry, renewed on every append, and opens a new log with run.started after it expired', async () => {
    const runId = randomUUID();
    const { log } = runEventKeys(prefix, runId);
    await bus.append(runId, progress('e1'));
    const ttl = await admin.ttl(log);
    expect(ttl).toBeGreaterThan(24 * 3600 - 10);
    expect(ttl).toBeLessThanOrEqual(24 * 3600);

    const short = new RunEventBus({ redis: admin, prefix, logTtlSeconds: 60 });
    await admin.expire(log, 5);
    expect(await short.append(runId, progress('e2'))).toBe(3);
    expect(await admin.ttl(log)).toBeGreaterThan(55);
    expect(await short.read(runId)).toEqual([
      { seq: 1, at: appendedAt, event: runStarted(runId) },
      { seq: 2, at: appendedAt, event: progress('e1') },
      { seq: 3, at: appendedAt, event: progress('e2') },
    ]);

    await admin.pexpire(log, 1);
    await eventually(async () => (await admin.exists(log)) === 0, { what: 'the log to expire' });
    expect(await short.append(runId, progress('e3'))).toBe(2);
    expect(await short.read(runId)).toEqual([{ seq: 1, at: appendedAt, event: runStarted(runId) }, { seq: 2, at: appendedAt, event: progress('e3') }]);
    expect(await admin.ttl(log)).toBeGreaterThan(55);
  });

  it('delivers every event after its subscriber connection is killed mid-stream and reconnects', async () => {
    const ownSubscriber = connect();
    const ownId = Number(await ownSubscriber.client('ID'));
    const ownBus = new RunEventBus({ redis: connect(), subscriber: ownSubscriber, prefix });
    const runId = randomUUID();
    let readies = 0;
    ownSubscriber.on('ready', () => readies++);
    await bus.append(runId, runStarted(runId));
    await bus.append(runId, progress('e1'));
    const items: SequencedEvent[] = [];
    for await (const item of eventsOf(ownBus, runId)) {
      items.push(item);
      if (item.seq === 2) {
        await bus.append(runId, progress('e2'));
        await bus.append(runId, progress('e3'));
      }
      if (item.seq === 4) {
        await admin.client('KILL', 'ID', String(ownId));
        // Published while the subscriber is away: pub/sub drops them, the catch-up must not.
        for (let i = 4; i <= 8; i++) await bus.append(runId, progress(`e${i}`));
        await bus.append(runId, completed);
      }
    }
    expect(seqs(items)).toEqual(range(1, 10));
    expect(events(items)).toEqual([runStarted(runId), ...range(1, 8).map((i) => progress(`e${i}`)), completed]);
    expect(readies).toBeGreaterThanOrEqual(1);
    expect(ownBus.stats()).toEqual({ streams: 0, channels: 0, listeners: 0 });
    await ownBus.close();
  });

  it("opens a run's log with run.started whoever appends first, and the starter's run.started then adds nothing", async () => {
    const runId = randomUUID();
    // A worker handed a step by the reaper appends before the run's starter has.
    expect(await bus.append(runId, stepStarted)).toBe(2);
    // The starter's run.started comes second: it adds nothing and answers the log's last seq.
    expect(await bus.append(runId, runStarted(runId))).toBe(2);
    expect(await bus.read(runId)).toEqual([{ seq: 1, at: appendedAt, event: runStarted(runId) }, { seq: 2, at: appendedAt, event: stepStarted }]);
    expect(await bus.lastSeq(runId)).toBe(2);

    const stream = collect(eventsOf(bus, runId, { afterSeq: 0 }));
    await subscribedOnRedis(runId);
    expect(await bus.append(runId, completed)).toBe(3);
    expect(await stream).toEqual([
      { seq: 1, at: appendedAt, event: runStarted(runId) },
      { seq: 2, at: appendedAt, event: stepStarted },
      { seq: 3, at: appendedAt, event: completed },
    ]);
  });

  it('opens a fresh log with run.started before the events of an appendAll, and logs it once however often the starter appends it', async () => {
    const batch = randomUUID();
    expect(await bus.appendAll(batch, [stepStarted, progress('a'), progress('b')])).toBe(4);
    expect(await bus.read(batch)).toEqual([
      { seq: 1, at: appendedAt, event: runStarted(batch) },
      { seq: 2, at: appendedAt, event: stepStarted },
      { seq: 3, at: appendedAt, event: progress('a') },
      { seq: 4, at: appendedAt, event: progress('b') },
    ]);

    const led = randomUUID(); // an appendAll led by run.started logs it once, at seq 1
    expect(await bus.appendAll(led, [runStarted(led), progress('a')])).toBe(2);
    expect(await bus.read(led)).toEqual([{ seq: 1, at: appendedAt, event: runStarted(led) }, { seq: 2, at: appendedAt, event: progress('a') }]);

    const runId = randomUUID();
    expect(await bus.append(runId, runStarted(runId))).toBe(1);
    expect(await bus.append(runId, progress('a'))).toBe(2);
    const stream = collect(eventsOf(bus, runId));
    await subscribedOnRedis(runId);
    // Again later (a retried start): nothing is logged or published, the answer is the last seq.
    expect(await bus.append(runId, runStarted(runId))).toBe(2);
    expect(await bus.appendAll(runId, [runStarted(runId), progress('b')])).toBe(3);
    expect(await bus.append(runId, completed)).toBe(4);
    const expected = [
      { seq: 1, at: appendedAt, event: runStarted(runId) },
      { seq: 2, at: appendedAt, event: progress('a') },
      { seq: 3, at: appendedAt, event: progress('b') },
      { seq: 4, at: appendedAt, event: completed },
    ];
    expect(await stream).toEqual(expected);
    expect(await bus.read(runId)).toEqual(expected);
  });

  it("opens a run's empty log with run.started when the mount tally appender appends first", async () => {
    const runId = randomUUID();
    const tally = new MountTallyAppender({ redis: admin, prefix, logTtlSeconds: 60 });
    const event: RunEvent = { type: 'step.progress', nodeId: 'x', message: 'm' };
    expect(await tally.appendTallied(runId, [{ event, mark: null }])).toBe(2);
    expect(await bus.read(runId)).toEqual([{ seq: 1, at: appendedAt, event: runStarted(runId) }, { seq: 2, at: appendedAt, event }]);
    // On a log that has entries it adds no second run.started.
    expect(await tally.appendTallied(runId, [{ event, mark: null }])).toBe(3);
    expect(await bus.read(runId)).toEqual([{ seq: 1, at: appendedAt, event: runStarted(runId) }, { seq: 2, at: appendedAt, event }, { seq: 3, at: appendedAt, event }]);
  });

  // Redis ran the append, then the connection dropped before its reply came back (a graceful
  // restart exits with replies unsent): ioredis sends the unanswered command again on its next
  // connection. The second arrival must change nothing, for both append scripts.
  it.each([
    ['the bus', (redis: Redis, runId: string) => new RunEventBus({ redis, prefix }).appendAll(runId, [stepStarted, completed])],
    [
      'the mount tally appender',
      (redis: Redis, runId: string) =>
        new MountTallyAppender({ redis, prefix, logTtlSeconds: 60 }).appendTallied(runId, [
          { event: stepStarted, mark: null },
          { event: completed, mark: null },
        ]),
    ],
  ])('logs an append once when %s sends it again after its reply was lost', async (_, append) => {
    const proxy = await startFaultProxy(stack().redisUrl);
    try {
      const redis = createRedisConnection(`redis://127.0.0.1:${proxy.port}`);
      redis.on('error', () => undefined);
      connections.push(redis);
      // Both scripts known to Redis first: a NOSCRIPT answer would be lost as well.
      await append(redis, randomUUID());
      const runId = randomUUID();
      const { log } = runEventKeys(prefix, runId);
      const connectionsBefore = proxy.connections;
      proxy.freezeOpen();
      const seq = append(redis, runId);
      await eventually(async () => (await admin.llen(log)) === 3, { what: 'the append run by Redis' });
      proxy.resetAll();
      expect(await seq).toBe(3);
      expect(proxy.connections).toBeGreaterThan(connectionsBefore);
      // A later append on the new connection is numbered after the first, not after a second copy.
      expect(await append(redis, runId)).toBe(5);
      expect(events(await bus.read(runId))).toEqual([runStarted(runId), stepStarted, completed, stepStarted, completed]);
    } finally {
      await proxy.close();
    }
  });

  it('ends a stream whose log Redis lost and began again, its terminal event landing on a seq the stream had used, with the terminal event of the run record', async () => {
    const runId = randomUUID();
    const { log } = runEventKeys(prefix, runId);
    expect(await bus.append(runId, progress('before'))).toBe(2);
    let record: StoredRun = { id: runId, orgId: randomUUID(), status: 'running', error: null, outputs: null };
    const items: SequencedEvent[] = [];
    const controller = new AbortController();
    const stream = (async () => {
      for await (const item of followRunEvents(bus, async () => record, { runId, afterSeq: 0, signal: controller.signal, checkMs: 200 })) items.push(item);
    })();
    await eventually(() => items.length === 2, { what: 'the first two events' });
    // Redis restarted empty: the run's events go on in a new log, its terminal event at seq 2.
    await admin.del(log);
    record = { ...record, status: 'completed', outputs: { total: { kind: 'int', value: 3 } } };
    expect(await bus.append(runId, { type: 'run.completed', outputs: { total: { kind: 'int', value: 3 } } })).toBe(2);
    await stream;
    expect(seqs(items)).toEqual([1, 2, 3]);
    expect(events(items)).toEqual([runStarted(runId), progress('before'), { type: 'run.completed', outputs: { total: { kind: 'int', value: 3 } } }]);
    controller.abort();
  });

  it('gives streams of one run at different positions every event once, in order, each live event decoded once for all of them', async () => {
    const runId = randomUUID();
    for (let i = 1; i <= 4; i++) await bus.append(runId, progress(`e${i}`));
    // Positions 0, 2 and 4: replays of different lengths from the log, then the same live events.
    const received = [0, 2, 4].map(() => [] as SequencedEvent[]);
    const streams = [0, 2, 4].map(async (afterSeq, i) => {
      for await (const item of eventsOf(bus, runId, { afterSeq })) received[i]!.push(item);
    });
    await eventually(() => received.every((items) => items.at(-1)?.seq === 5), { what: 'every stream at the log end' });
    for (let i = 5; i <= 9; i++) await bus.append(runId, progress(`e${i}`));
    await bus.append(runId, completed);
    await Promise.all(streams);
    const [all, fromTwo, fromFour] = received as [SequencedEvent[], SequencedEvent[], SequencedEvent[]];
    expect(seqs(all)).toEqual(range(1, 11));
    expect(seqs(fromTwo)).toEqual(range(3, 11));
    expect(seqs(fromFour)).toEqual(range(5, 11));
    expect(events(all).slice(5)).toEqual([...range(5, 9).map((i) => progress(`e${i}`)), completed]);
    // Caught up, the three take each live event (seq 6..11) as one object: one JSON.parse for all.
    for (let seq = 6; seq <= 11; seq++) {
      const shared = fromFour[seq - 5];
      expect(all[seq - 1]).toBe(shared);
      expect(fromTwo[seq - 3]).toBe(shared);
    }
  });

  it('fails every stream of a run on a live message that is not an event of ours, decoded once for all of them', async () => {
    const runId = randomUUID();
    await bus.append(runId, progress('e1'));
    const streams = [0, 1].map((afterSeq) => collect(eventsOf(bus, runId, { afterSeq })));
    await eventually(() => bus.stats().listeners === 2, { what: 'two listeners' });
    await subscribedOnRedis(runId);
    await admin.publish(runEventKeys(prefix, runId).channel, '{"not":"an event"}');
    for (const stream of streams) await expect(stream).rejects.toThrow(/not a sequenced run event/);
    await unsubscribedOnRedis(runId);
  });

  it("ends a stream at once when its consumer returns while a next() waits for the run's next event, and gives its subscription back", async () => {
    const runId = randomUUID();
    await bus.append(runId, progress('e1'));
    const stream = eventsOf(bus, runId, { afterSeq: 2 });
    const waiting = stream.next();
    await subscribedOnRedis(runId);
    expect(bus.stats()).toEqual({ streams: 1, channels: 1, listeners: 1 });
    // No event comes: an async generator's return() would wait behind the pending next() for ever.
    expect(await stream.return()).toEqual({ value: undefined, done: true });
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
    await unsubscribedOnRedis(runId);
  });

  it('reports a bad position or a bus without a subscriber on the first next(), not when the stream is asked for', async () => {
    const runId = randomUUID();
    const bad = eventsOf(bus, runId, { afterSeq: -1 });
    await expect(bad.next()).rejects.toThrow(RangeError);
    expect(await bad.next()).toEqual({ value: undefined, done: true });
    const appendOnly = new RunEventBus({ redis: admin, prefix });
    await expect(eventsOf(appendOnly, runId).next()).rejects.toThrow(/no subscriber connection/);
  });

  it("ends a followed stream whose client goes away while it waits, and one that ends on its run record's terminal event, each giving its subscription back", async () => {
    const runId = randomUUID();
    await bus.append(runId, progress('e1'));
    const record: StoredRun = { id: runId, orgId: randomUUID(), status: 'running', error: null, outputs: null };
    const controller = new AbortController();
    const items: SequencedEvent[] = [];
    const left = (async () => {
      for await (const item of followRunEvents(bus, async () => record, { runId, afterSeq: 0, signal: controller.signal, checkMs: 60_000 })) items.push(item);
    })();
    await eventually(() => items.length === 2, { what: 'the first two events' });
    controller.abort();
    await left;
    expect(bus.stats()).toEqual({ streams: 0, channels: 0, listeners: 0 });
    // The run finished in Postgres and its log never got the terminal event: after two silent
    // checks the record's ending ends the stream, and the log's stream (waiting) is returned.
    const finished: StoredRun = { ...record, status: 'failed', error: { code: 'step_failed', message: 'boom' } };
    const ended = await collect(followRunEvents(bus, async () => finished, { runId, afterSeq: 2, signal: new AbortController().signal, checkMs: 50 }));
    expect(ended).toEqual([{ seq: 3, event: failed }]);
    await unsubscribedOnRedis(runId);
  });

  it("follows a fresh run's stream without reading its log, and reads it at a gap (a run.started appended before the subscription)", async () => {
    const redis = connect();
    const fresh = new RunEventBus({ redis, subscriber, prefix });
    const reads = jest.spyOn(redis, 'multi');
    try {
      const runId = randomUUID();
      const stream = eventsOf(fresh, runId, { fresh: true });
      const first = stream.next();
      await subscribedOnRedis(runId);
      await fresh.append(runId, progress('e1'));
      expect(await first).toMatchObject({ value: { seq: 1, event: { type: 'run.started', runId } }, done: false });
      expect(await stream.next()).toMatchObject({ value: { seq: 2, event: progress('e1') }, done: false });
      expect(reads).not.toHaveBeenCalled();
      await stream.return();
      // Appended before the stream subscribed: missed live, read when the next event shows the gap.
      const late = randomUUID();
      await fresh.append(late, progress('early'));
      const items: SequencedEvent[] = [];
      const followed = (async () => {
        for await (const item of eventsOf(fresh, late, { fresh: true })) items.push(item);
      })();
      await subscribedOnRedis(late);
      expect(items).toEqual([]);
      await fresh.append(late, failed);
      await followed;
      expect(items.map((i) => i.seq)).toEqual([1, 2, 3]);
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
      await fresh.close();
      redis.disconnect();
    }
  });

  it('ends a followed stream at once when its consumer returns while a next() waits, and gives its subscription back', async () => {
    const runId = randomUUID();
    await bus.append(runId, progress('e1'));
    const record: StoredRun = { id: runId, orgId: randomUUID(), status: 'running', error: null, outputs: null };
    const stream = followRunEvents(bus, async () => record, { runId, afterSeq: 0, signal: new AbortController().signal, checkMs: 60_000 });
    expect(await stream.next()).toMatchObject({ value: { seq: 1 }, done: false });
    expect(await stream.next()).toMatchObject({ value: { seq: 2, event: progress('e1') }, done: false });
    const waiting = stream.next();
    await subscribedOnRedis(runId);
    // No event comes: an async generator's return() would wait behind the pending next() for ever.
    expect(await stream.return!()).toEqual({ value: undefined, done: true });
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
    expect(bus.stats()).toEqual({ streams: 0, channels: 0, listeners: 0 });
    await unsubscribedOnRedis(runId);
    // Events appended later reach nobody.
    await bus.append(runId, progress('e2'));
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });
});

describe('a subscriber connection (createRedisSubscriber)', () => {
  it("tells its caller of its errors, none written to the console by ioredis, and subscribes again once Redis is back", async () => {
    const proxy = await startFaultProxy(stack().redisUrl);
    const consoleErrors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const errors: Error[] = [];
    const subscriber = createRedisSubscriber(`redis://127.0.0.1:${proxy.port}`, (err) => errors.push(err));
    const publisher = createRedisConnection(stack().redisUrl);
    try {
      const channel = uniqueName('subscriber-errors');
      const received: string[] = [];
      subscriber.on('message', (_channel: string, message: string) => received.push(message));
      await subscriber.subscribe(channel);
      // Cut, and every reconnection refused for a while: each attempt is an error of the connection.
      proxy.mode = 'refuse';
      proxy.resetAll();
      await eventually(async () => errors.length >= 2, { what: 'the refused reconnections told to the caller' });
      proxy.mode = 'pass';
      await eventually(async () => (await publisher.publish(channel, 'after')) === 1 && received.includes('after'), { what: 'the subscription renewed on reconnection' });
      const unhandled = consoleErrors.mock.calls.filter((args) => String(args[0]).includes('[ioredis]'));
      expect(unhandled).toEqual([]);
    } finally {
      consoleErrors.mockRestore();
      subscriber.disconnect();
      publisher.disconnect();
      await proxy.close();
    }
  });
});
