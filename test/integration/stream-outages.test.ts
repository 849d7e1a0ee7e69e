import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { TERMINAL_EVENT_TYPES, type RunEvent } from '../../services/contract';
import { eventually } from '../support/eventually';
import { startPrivateServers, type PrivateServers } from '../support/private-servers';
import { bearer, startTestService, type TestService } from '../support/service';
import { sseMessages, type SseMessage } from '../support/sse';

/**
 * Every run event stream ends with its terminal event and `[DONE]`, or stays open
 * until it can. Redis restarting and Postgres stopping are tried on servers of this file's own
 * (the stack's are shared with every other test file); a step that sleeps (a failpoint) keeps
 * the streams open across the outage.
 */

const oneStep = {
  version: 2,
  nodes: [
    { id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } },
    { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } },
  ],
};

/**
 * A job lost in an outage is recovered by the reaper, and a stream ends when its run does: the
 * reaper at the fault suite's pace (production's 30 s sweeps and 120 s stuck steps would put
 * that bound past this file's timeouts).
 */
const REAPER_AT_FAULT_PACE = { REAPER_INTERVAL_SECONDS: '2', STEP_STUCK_SECONDS: '10' };

interface OpenedStream {
  status: number;
  /** The messages so far (a failing test shows how far each stream got). */
  received: SseMessage[];
  /** Every message to the end of the response (resolves however the response ends). */
  messages: Promise<SseMessage[]>;
}

async function openStream(service: TestService): Promise<OpenedStream> {
  const res = await fetch(`${service.url}/v1/runs`, {
    method: 'POST',
    headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
    body: JSON.stringify({ workflow: oneStep }),
  });
  const received: SseMessage[] = [];
  const read = async (): Promise<SseMessage[]> => {
    if (res.status !== 200 || !res.body) return (await res.text(), []);
    // A response cut short ends the read; what arrived until then is what the test judges.
    try {
      for await (const message of sseMessages(res.body)) received.push(message);
    } catch {
      /* judged by what was received */
    }
    return received;
  };
  return { status: res.status, received, messages: read() };
}
/** What is wrong with a stream's messages, or null: run.started first, then ..., a terminal event, [DONE]. */
function streamProblem(messages: SseMessage[]): string | null {
  if (messages.length === 0) return 'no event at all';
  const first = JSON.parse(messages[0]!.data) as RunEvent;
  if (first.type !== 'run.started' || typeof first.runId !== 'string') return `first event is ${messages[0]!.data}`;
  const last = messages[messages.length - 1]!;
  if (last.data !== '[DONE]') return `ends with ${last.data}, not [DONE] (${messages.length} messages)`;
  const terminal = messages[messages.length - 2];
  const event = terminal && terminal.data !== '[DONE]' ? (JSON.parse(terminal.data) as RunEvent) : undefined;
  if (!event || !TERMINAL_EVENT_TYPES.includes(event.type)) return `the event before [DONE] is ${terminal?.data}`;
  return null;
}

/**
 * Every stream answered 200 and ended with its terminal event and [DONE]. A stream still open
 * after `withinMs` fails the test there (not at Jest's timeout), naming its run, how far it got
 * and what the database says of the run and its steps.
 */
async function expectAllEnded(service: TestService, streams: OpenedStream[], withinMs = 60_000): Promise<void> {
  expect(streams.map((s) => s.status)).toEqual(streams.map(() => 200));
  const ended = await Promise.race([Promise.all(streams.map((s) => s.messages)).then(() => true), sleep(withinMs, false, { ref: false })]);
  if (!ended) {
    const open = await Promise.all(
      streams
        .filter((s) => s.received.at(-1)?.data !== '[DONE]')
        .map(async (s) => {
          const first = s.received[0] ? (JSON.parse(s.received[0].data) as RunEvent) : undefined;
          const runId = first?.type === 'run.started' ? first.runId : undefined;
          const run = runId ? await service.prisma.run.findUnique({ where: { id: runId }, select: { status: true, steps: { select: { nodeId: true, status: true, attempt: true } } } }) : null;
          return { runId, events: s.received.map((m) => m.data.slice(0, 60)), run };
        }),
    );
    throw new Error(`${open.length} of ${streams.length} streams still open after ${withinMs} ms: ${JSON.stringify(open, null, 1)}`);
  }
  const problems = (await Promise.all(streams.map((s) => s.messages))).map(streamProblem).filter((p) => p !== null);
  expect(problems).toEqual([]);
}

describe('streams across a Redis restart', () => {
  let servers: PrivateServers;
  let service: TestService;

  beforeAll(async () => {
    servers = await startPrivateServers();
    service = await startTestService({
      postgres: servers.postgres,
      // Runs started during the restart wait for Redis (its loading takes 2 s, longer on a loaded
      // machine) rather than be refused 503 after REQUEST_REDIS_WAIT_MS: what is under test is
      // that their streams ride it out (the bound itself: redis-away-requests.test.ts).
      env: { REDIS_URL: servers.redisUrl, SVC_FAILPOINTS: 'step.afterReserve=sleep(1000)', STREAM_RECORD_CHECK_MS: '300', WORKER_CONCURRENCY: '64', REQUEST_REDIS_WAIT_MS: '60000', ...REAPER_AT_FAULT_PACE },
    });
    // Enough data that the restarted Redis answers LOADING for a while, as a production one does.
    // (Three million keys load in about two seconds; written by one script, in about as long, or
    // past Redis' 5 s busy threshold on a loaded machine: the service, just started, then meets
    // BUSY answers, which its step queue and worker ride out: services/queue/step-worker.ts.)
    const filler = new Redis(servers.redisUrl);
    await filler.eval("for i = 1, 3000000 do redis.call('SET', 'filler:' .. i, 'x') end", 0);
    await filler.quit();
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await servers?.close();
  }, 60_000);

  it('gives every stream, open or opened during the restart, run.started first and its terminal event and [DONE] last', async () => {
    const before = await Promise.all(Array.from({ length: 10 }, () => openStream(service)));
    const restart = servers.restartRedis();
    let restarted = false;
    void restart.then(() => (restarted = true));
    // New runs while Redis stops, loads its data and comes back: their subscriptions meet the LOADING window.
    const during: Promise<OpenedStream>[] = [];
    for (let i = 0; i < 40 && (!restarted || i < 20); i++) {
      during.push(openStream(service));
      await sleep(50);
    }
    await restart;
    await expectAllEnded(service, [...before, ...(await Promise.all(during))]);
  }, 90_000);
});

describe('streams across a Postgres outage', () => {
  let servers: PrivateServers;
  let service: TestService;

  beforeAll(async () => {
    servers = await startPrivateServers();
    service = await startTestService({
      postgres: servers.postgres,
      // The step sleeps past the outage, so the runs themselves never meet it; their streams do.
      env: { SVC_FAILPOINTS: 'step.afterReserve=sleep(6000)', STREAM_RECORD_CHECK_MS: '200', ...REAPER_AT_FAULT_PACE },
    });
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await servers?.close();
  }, 60_000);

  it('keeps every open stream through a stop of a few seconds, to its terminal event and [DONE]', async () => {
    const streams = await Promise.all(Array.from({ length: 12 }, () => openStream(service)));
    // The worker holds as many of the steps as it may run at once, sleeping past the outage, before Postgres goes.
    const held = Math.min(streams.length, service.config.workerConcurrency);
    await eventually(async () => (await service.runtime.queue.counts()).active === held, { what: `${held} steps to be running in the worker` });
    await servers.crashPostgres();
    // Several record checks fail while it is down.
    await sleep(2000);
    await servers.startPostgres();
    await expectAllEnded(service, streams);
  }, 90_000);

  it('answers a new request during the outage 503 with Retry-After and a message, and /readyz names no address', async () => {
    await servers.crashPostgres();
    try {
      const refused = await fetch(`${service.url}/v1/runs`, {
        method: 'POST',
        headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' },
        body: JSON.stringify({ workflow: oneStep }),
      });
      const body = (await refused.json()) as { error?: string; code?: string };
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(body.code).toBe('unavailable');
      expect(body.error).toMatch(/database/);

      const ready = await fetch(`${service.url}/readyz`);
      const readyText = await ready.text();
      expect(ready.status).toBe(503);
      expect(readyText).not.toContain(String(servers.postgres.port));
      expect(readyText).not.toContain(servers.postgres.host);
    } finally {
      await servers.startPostgres();
    }
  }, 90_000);
});

describe('a burst of streams on a small pool', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({
      env: { SVC_FAILPOINTS: 'step.afterReserve=sleep(3000)', STREAM_RECORD_CHECK_MS: '100', WORKER_CONCURRENCY: '250' },
    });
  }, 60_000);

  afterAll(async () => {
    await service?.close();
  }, 60_000);

  it('cuts none of 200 concurrent streams whose record checks wait over 2 s for the pool of 10', async () => {
    const streams = await Promise.all(Array.from({ length: 200 }, () => openStream(service)));
    // A slow moment of the database: for 3 s every read of steps waits, so the record checks hold
    // all 10 pooled connections and the rest queue behind them (as under a burst of streams).
    const blocker = new pg.Client({ connectionString: service.db.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE steps IN ACCESS EXCLUSIVE MODE');
    await sleep(3000);
    await blocker.query('COMMIT');
    await blocker.end();
    await expectAllEnded(service, streams);
    // Every ended stream gave its log subscription back (none left behind by a reopened log).
    await eventually(() => service.runtime.bus.stats().streams === 0, { what: 'every stream to give its subscription back' });
    expect(service.runtime.bus.stats()).toMatchObject({ streams: 0, channels: 0 });
  }, 90_000);
});
