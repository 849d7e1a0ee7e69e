import type { RunEvent } from '../../../services/contract';
import { loadConfig } from '../../../services/platform/config';
import { eventually } from '../../support/eventually';
import { bearer, startTestService, type TestService } from '../../support/service';
import { readSse, type SseMessage } from '../../support/sse';
import { expectFigure, figure, percentile, scale } from '../support/figures';
import { startNginx, type Nginx } from '../support/nginx';
import { readTimed } from '../support/timed-sse';

/**
 * S5: run event streams through Debian's nginx with its default proxy settings (buffering on,
 * HTTP/1.0 upstream, proxy_read_timeout 60 s). The service must make that work on its side:
 * `X-Accel-Buffering: no` turns the buffering off for its streams, and heartbeat comments more
 * often than every 60 s keep an idle stream from nginx's read timeout.
 */

const IDLE_MS = scale(20_000, 300_000);
const SLOW_MS = 2000;
const RESUMES = scale(6, 20);

/** The service's production heartbeat: the test service's own (1 s) would hide a too-rare default. */
const DEFAULT_HEARTBEAT_MS = loadConfig({ DATABASE_URL: 'postgres://h/db', REDIS_URL: 'redis://h', BLOB_SIGNING_SECRET: 'x'.repeat(32), BLOB_DRIVER: 'fs', BLOB_DIR: '/tmp/unused' }).sseHeartbeatMs;

/** add → slow (a step that sleeps SLOW_MS) → last, and an output. */
const chain = (sleeper: string) => ({
  version: 2,
  nodes: [
    { id: 'first', uses: 'math-add', inputs: { a: 1, b: 2 } },
    { id: sleeper, uses: 'math-add', inputs: { a: '${first.result}', b: 1 } },
    { id: 'last', uses: 'math-add', inputs: { a: `\${${sleeper}.result}`, b: 1 } },
    { id: 'sum', uses: 'output', inputs: { value: '${last.result}' } },
  ],
});

const events = (messages: readonly SseMessage[]): (RunEvent & { runId?: string })[] =>
  messages.filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent & { runId?: string });

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

describe('S5: SSE through nginx with default settings', () => {
  let service: TestService;
  let nginx: Nginx;

  beforeAll(async () => {
    service = await startTestService({
      env: {
        SSE_HEARTBEAT_MS: String(DEFAULT_HEARTBEAT_MS),
        SVC_FAILPOINTS: `step.afterReserve:slow=sleep(${SLOW_MS});step.afterReserve:idle=sleep(${IDLE_MS})`,
      },
    });
    nginx = await startNginx(service.url);
    // A first run straight to the service, so that its cold start is not counted against nginx.
    expect(events(await readSse(await startRun(service.url, chain('warm')))).at(-1)?.type).toBe('run.completed');
  }, 60_000);

  afterAll(async () => {
    await nginx?.close();
    await service?.close();
  });

  function startRun(base: string, workflow: unknown, signal?: AbortSignal): Promise<Response> {
    return fetch(`${base}/v1/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ workflow }), ...(signal ? { signal } : {}) });
  }

  it('delivers the first event through nginx in under 1 s while the run is still running', async () => {
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const res = await startRun(nginx.url, chain('slow'));
      expect(res.status).toBe(200);
      const stream = readTimed(res);
      await eventually(() => stream.messages.length > 0 || stream.ended(), { timeoutMs: SLOW_MS * 3, what: 'the first event through nginx' });
      waits.push((stream.messages[0]?.at ?? Infinity) - started);
      await stream.done;
      expect(events(stream.messages).at(-1)).toMatchObject({ type: 'run.completed', outputs: { sum: { value: 5 } } });
    }
    // Buffered, the first event would wait for the run's end (SLOW_MS and more).
    expectFigure('S5', 'first event through nginx (worst of 5)', Math.max(...waits), { max: 1000 }, 'ms');
  }, 60_000);

  it(`keeps an idle stream open through nginx for ${IDLE_MS / 1000} s, to its terminal event`, async () => {
    expect(DEFAULT_HEARTBEAT_MS).toBeLessThan(60_000);
    const res = await startRun(nginx.url, chain('idle'));
    expect(res.status).toBe(200);
    const stream = readTimed(res);
    await stream.done;
    const got = events(stream.messages);
    const times = stream.messages.map((m) => m.at);
    const silence = Math.max(...times.slice(1).map((t, i) => t - times[i]!));
    // Whatever nginx passed on (events and heartbeats): its longest pause must stay under its 60 s read timeout.
    const passed = [...times, ...stream.heartbeats].sort((a, b) => a - b);
    const longestPause = Math.max(...passed.slice(1).map((t, i) => t - passed[i]!));
    expect(got.at(-1)).toMatchObject({ type: 'run.completed', outputs: { sum: { value: 5 } } });
    expect(stream.messages.at(-1)?.data).toBe('[DONE]');
    // The stream really was idle that long, kept open by heartbeats that nginx let through.
    expectFigure('S5', 'idle stream survived through nginx', Math.round(silence / 1000), { min: Math.floor(IDLE_MS / 1000) }, 's');
    expect(stream.heartbeats.length).toBeGreaterThanOrEqual(Math.floor(IDLE_MS / DEFAULT_HEARTBEAT_MS) - 1);
    expectFigure('S5', 'longest pause of an idle stream through nginx', longestPause, { max: 60_000 }, 'ms');
  }, IDLE_MS + 60_000);

  it('resumes through nginx with Last-Event-ID, nothing lost or duplicated', async () => {
    let lost = 0;
    let duplicated = 0;
    const resumeWaits: number[] = [];
    for (let round = 0; round < RESUMES; round++) {
      const controller = new AbortController();
      const res = await startRun(nginx.url, chain('slow'), controller.signal);
      expect(res.status).toBe(200);
      const first = readTimed(res);
      // Cut the client after 1 to 3 messages, while the slow step holds the run open.
      const cutAfter = 1 + (round % 3);
      await eventually(() => first.messages.length >= cutAfter || first.ended(), { timeoutMs: 10_000, what: `${cutAfter} messages` });
      controller.abort();
      await first.done;
      const seen = first.messages.slice(0, cutAfter);
      const runId = events(seen)[0]!.runId!;
      const asked = Date.now();
      const resumed = await fetch(`${nginx.url}/v1/runs/${runId}/events`, { headers: { ...bearer(service.account.token), 'Last-Event-ID': seen.at(-1)!.id! } });
      expect(resumed.status).toBe(200);
      const rest = await readSse(resumed);
      resumeWaits.push(Date.now() - asked);
      const all = [...seen, ...rest];
      expect(all.at(-1)?.data).toBe('[DONE]');
      const ids = all.filter((m) => m.data !== '[DONE]').map((m) => Number(m.id));
      // The whole log, read again straight from the service: the truth to compare with.
      const truth = (await readSse(await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: bearer(service.account.token) }))).filter((m) => m.data !== '[DONE]');
      lost += truth.filter((m) => !ids.includes(Number(m.id))).length;
      duplicated += ids.length - new Set(ids).size;
      expect(ids).toEqual(truth.map((m) => Number(m.id)));
      expect(events(all).filter((e) => TERMINAL.has(e.type)).map((e) => e.type)).toEqual(['run.completed']);
    }
    expectFigure('S5', 'events lost on resume through nginx', lost, { max: 0 });
    expectFigure('S5', 'events duplicated on resume through nginx', duplicated, { max: 0 });
    figure('S5', 'resumed stream to its end, p50', percentile(resumeWaits, 50), undefined, 'ms');
  }, 120_000);
});
