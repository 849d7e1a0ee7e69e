import type { Redis } from 'ioredis';
import request from 'supertest';
import { RunEventSchema, RunListSchema, RunSchema, type Outputs, type RunEvent, type RunList } from '../../services/contract';
import { createRedisConnection, RunEventBus, runEventKeys } from '../../services/queue';
import { LedgerRepository, RunRepository, StepRepository, type PrismaClient } from '../../services/store';
import { eventually, stillTrueFor } from '../support/eventually';
import { seedAccount, type SeededAccount } from '../support/fixtures';
import { sseMessages, readSse, type SseMessage } from '../support/sse';
import { startTestService, type TestService } from '../support/service';
import { expectValid } from '../support/json-api';
import { stack } from '../support/stack';

type RunState = 'pending' | 'running' | 'completed' | 'failed';

const outputs: Outputs = {
  caption: { kind: 'text', value: 'a lighthouse at dusk' },
  image: { kind: 'image', ref: 'http://127.0.0.1/blobs/runs/x/image.png?expires=1900000000&signature=abc', mimeType: 'image/png', metadata: { width: 64 } },
};
const failure = { code: 'step_failed', message: 'gen failed: the provider answered 500' };
const started = (runId: string): RunEvent => ({ type: 'run.started', runId });
const progress = (message: string): RunEvent => ({ type: 'step.progress', nodeId: 'gen', message });

describe('run history and replay over HTTP', () => {
  let service: TestService;
  let prisma: PrismaClient;
  let runs: RunRepository;
  let steps: StepRepository;
  const connections: Redis[] = [];
  let bus: RunEventBus;
  let prefix: string;
  let server: string;
  let owner: SeededAccount;
  let reader: SeededAccount;
  let stranger: SeededAccount;

  beforeAll(async () => {
    // An API alone (no worker): the runs here are brought to each state by hand, as the executor would.
    service = await startTestService({ env: { ROLE: 'api', STREAM_RECORD_CHECK_MS: '200', STREAM_FINISHED_GRACE_MS: '300', SSE_HEARTBEAT_MS: '50' } });
    prisma = service.prisma;
    prefix = service.config.redisPrefix;
    runs = new RunRepository(service.database);
    steps = new StepRepository(service.database);
    const connect = () => {
      const redis = createRedisConnection(stack().redisUrl);
      connections.push(redis);
      return redis;
    };
    bus = new RunEventBus({ redis: connect(), subscriber: connect(), prefix });
    server = service.url;
    owner = await seedAccount(prisma, { slug: 'owner', scopes: ['read', 'run'] });
    reader = await seedAccount(prisma, { slug: 'reader', scopes: ['read'] });
    stranger = await seedAccount(prisma, { slug: 'stranger', scopes: ['run'] });
    for (const account of [owner, stranger]) await new LedgerRepository(prisma).credit(account.orgId, 10_000_000, 'test funds');
  });

  afterEach(async () => {
    // Every stream, finished or abandoned by its client, gave its subscription back.
    await eventually(() => service.runtime.bus.stats().streams === 0 && service.runtime.bus.stats().channels === 0, { what: 'streams to be released' });
  });

  afterAll(async () => {
    await bus?.close();
    const admin = connections[0];
    if (admin) {
      const keys = await admin.keys(`${prefix}:*`);
      if (keys.length > 0) await admin.del(...keys);
    }
    for (const redis of connections) redis.disconnect();
    await service?.close();
  });

  const bearer = (account: SeededAccount) => ({ Authorization: `Bearer ${account.token}` });

  /** A run of two steps (gen → out) brought to `state` through the store, as the executor would. */
  async function runIn(state: RunState, account: SeededAccount = owner): Promise<string> {
    const runId = await runs.createRun({
      orgId: account.orgId,
      userId: account.userId,
      tokenId: account.tokenId,
      definition: { version: 2, nodes: [] },
      inputs: {},
      capMicros: 500_000,
      steps: [
        { nodeId: 'gen', pendingDeps: 0 },
        { nodeId: 'out', pendingDeps: 1 },
      ],
    });
    if (state === 'pending') return runId;
    if (!(await runs.markRunning(runId))) throw new Error('the run did not start');
    if (state === 'running') return runId;
    const gen = await steps.reserve({ runId, nodeId: 'gen', estimateMicros: 50_000 });
    if (!gen.ok) throw new Error(`reserve gen: ${gen.reason}`);
    if (state === 'failed') {
      await runs.failRun(runId, failure);
      return runId;
    }
    await steps.completeStep({ runId, nodeId: 'gen', attemptToken: gen.attemptToken, costMicros: 12_345, output: { image: outputs.image }, ms: 830, dependents: ['out'] });
    const out = await steps.reserve({ runId, nodeId: 'out', estimateMicros: 0 });
    if (!out.ok) throw new Error(`reserve out: ${out.reason}`);
    await steps.completeStep({ runId, nodeId: 'out', attemptToken: out.attemptToken, costMicros: 0, output: {}, ms: 2, dependents: [] });
    if (!(await runs.completeRun(runId, outputs))) throw new Error('the run did not complete');
    return runId;
  }

  /** Opens the replay stream of a run (a real HTTP client, so it is read while it is open). */
  async function openEvents(runId: string, options: { account?: SeededAccount; lastEventId?: string; after?: string } = {}): Promise<Response> {
    const headers: Record<string, string> = bearer(options.account ?? owner);
    if (options.lastEventId !== undefined) headers['Last-Event-ID'] = options.lastEventId;
    const query = options.after === undefined ? '' : `?after=${encodeURIComponent(options.after)}`;
    return fetch(`${server}/v1/runs/${runId}/events${query}`, { headers, signal: AbortSignal.timeout(10_000) });
  }

  const parsed = (messages: SseMessage[]) => messages.map((m) => (m.data === '[DONE]' ? { id: m.id, data: '[DONE]' } : { id: m.id, event: JSON.parse(m.data) as RunEvent }));

  describe('GET /v1/runs/:id', () => {
    it("answers a completed run with its steps, USD money, ISO times and exactly the outputs its run.completed event carried", async () => {
      const runId = await runIn('completed');
      const event: RunEvent = { type: 'run.completed', outputs };
      await bus.append(runId, event);
      const res = await request(server).get(`/v1/runs/${runId}`).set(bearer(owner)).expect(200);
      expectValid(RunSchema, res.body);
      expect(res.body).toMatchObject({
        id: runId,
        status: 'completed',
        error: null,
        costUsd: 0.012345,
        maxCostUsd: 0.5,
        steps: [
          { nodeId: 'gen', status: 'completed', costUsd: 0.012345, ms: 830 },
          { nodeId: 'out', status: 'completed', costUsd: 0, ms: 2 },
        ],
      });
      const logged = (await bus.read(runId)).at(-1)!.event;
      expect(logged.type).toBe('run.completed');
      expect(res.body.outputs).toEqual(logged.type === 'run.completed' ? logged.outputs : 'no outputs in the log');
      for (const field of ['createdAt', 'startedAt', 'finishedAt']) expect(new Date(res.body[field]).toISOString()).toBe(res.body[field]);
      expect(res.body.steps[0]).not.toHaveProperty('error');
      // The same under the /api prefix.
      expect((await request(server).get(`/api/v1/runs/${runId}`).set(bearer(owner)).expect(200)).body).toEqual(res.body);
    });

    it('answers a failed run with its error and no outputs, and a pending one with no times or cost yet', async () => {
      const failed = await request(server).get(`/v1/runs/${await runIn('failed')}`).set(bearer(owner)).expect(200);
      expectValid(RunSchema, failed.body);
      expect(failed.body).toMatchObject({ status: 'failed', outputs: null, error: failure, costUsd: 0 });
      expect(failed.body.steps.map((s: { status: string }) => s.status).sort()).toEqual(['cancelled', 'skipped']);

      const pending = await request(server).get(`/v1/runs/${await runIn('pending')}`).set(bearer(owner)).expect(200);
      expectValid(RunSchema, pending.body);
      expect(pending.body).toMatchObject({ status: 'pending', outputs: null, error: null, startedAt: null, finishedAt: null, costUsd: 0 });
    });

    it("answers 404 for another organization's run, an unknown id and a malformed one, with the same message", async () => {
      const theirs = await runIn('completed', stranger);
      for (const id of [theirs, '00000000-0000-4000-8000-000000000000', 'not-a-run', "1'; drop table runs"]) {
        const res = await request(server).get(`/v1/runs/${encodeURIComponent(id)}`).set(bearer(owner)).expect(404);
        expect(res.body).toEqual({ code: 'not_found', error: `no run with id "${id}" in your organization` });
      }
      await request(server).get(`/v1/runs/${theirs}`).set(bearer(stranger)).expect(200);
    });

    it('needs a token with the "run" scope', async () => {
      const runId = await runIn('running');
      const missing = await request(server).get(`/v1/runs/${runId}`).expect(401);
      expect(missing.headers['www-authenticate']).toBe('Bearer');
      expect(missing.body).toEqual({ code: 'unauthorized', error: expect.stringContaining('GET /v1/runs/:id needs an access token') });
      const broken = await request(server).get(`/v1/runs/${runId}`).set('Authorization', 'Bearer svc_broken').expect(401);
      expect(broken.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      const readOnly = await request(server).get(`/v1/runs/${runId}`).set(bearer(reader)).expect(403);
      expect(readOnly.body).toEqual({ code: 'insufficient_scope', error: expect.stringContaining('lacks the "run" scope that GET /v1/runs/:id needs') });
    });

    it("leaves the contract's paths to the contract: GET /v1/runs/node is 405, DELETE /v1/runs names both methods", async () => {
      const node = await request(server).get('/v1/runs/node').set(bearer(owner)).expect(405);
      expect(node.headers.allow).toBe('POST');
      expect(node.body.code).toBe('method_not_allowed');
      const wrong = await request(server).delete('/v1/runs').set(bearer(owner)).expect(405);
      expect(wrong.headers.allow).toBe('POST, GET');
      expect(wrong.body.error).toBe('DELETE is not allowed on /v1/runs; use POST or GET');
      // POST /v1/runs is still the contract's operation, whatever it answers here.
      // (An empty object: its 400 comes from the contract's validation, where a ref could resolve to nothing, a 404.)
      const post = await request(server).post('/v1/runs').set(bearer(owner)).send({});
      expect([404, 405]).not.toContain(post.status);
    });
  });

  describe('GET /v1/runs', () => {
    let lister: SeededAccount;
    /** The lister's runs, newest first, as the listing must give them. */
    let expected: string[];

    beforeAll(async () => {
      lister = await seedAccount(prisma, { slug: 'lister', scopes: ['run'] });
      await new LedgerRepository(prisma).credit(lister.orgId, 10_000_000, 'test funds');
      const states: RunState[] = ['completed', 'failed', 'running', 'pending', 'completed', 'failed', 'completed'];
      const ids: string[] = [];
      for (const state of states) ids.push(await runIn(state, lister));
      // Three runs share one instant and two another: ties are broken by id, descending.
      const base = Date.UTC(2026, 0, 1, 12, 0, 0, 0);
      const times = [base, base + 1, base + 1, base + 1, base + 2, base + 2, base + 3];
      for (const [i, id] of ids.entries()) await prisma.$executeRaw`UPDATE runs SET created_at = ${new Date(times[i]!)} WHERE id = ${id}::uuid`;
      expected = ids
        .map((id, i) => ({ id, at: times[i]! }))
        .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
    });

    const list = async (query: string, account: SeededAccount = lister): Promise<RunList> => {
      const res = await request(server).get(`/v1/runs${query}`).set(bearer(account)).expect(200);
      expectValid(RunListSchema, res.body);
      return res.body as RunList;
    };

    it("lists the organization's runs newest first, as summaries without steps or outputs", async () => {
      const page = await list('');
      expect(page.runs.map((r) => r.id)).toEqual(expected);
      expect(page.nextCursor).toBeNull();
      for (const summary of page.runs) expect(Object.keys(summary).sort()).toEqual(['batchId', 'costUsd', 'createdAt', 'error', 'finishedAt', 'id', 'maxCostUsd', 'scheduleId', 'status', 'workflowId', 'workflowName', 'workflowRef']);
      expect(page.runs[0]).toMatchObject({ status: 'completed', costUsd: 0.012345, maxCostUsd: 0.5, error: null, createdAt: '2026-01-01T12:00:00.003Z' });
      // Nobody else's runs, and nobody else sees these.
      const theirs = (await list('', stranger)).runs.map((r) => r.id);
      for (const id of expected) expect(theirs).not.toContain(id);
    });

    it('pages through 3 pages without duplicates or gaps, and new runs created meanwhile do not disturb the later pages', async () => {
      const first = await list('?limit=3');
      expect(first.runs.map((r) => r.id)).toEqual(expected.slice(0, 3));
      expect(first.nextCursor).toEqual(expect.any(String));
      // Runs created between pages land in front of page 1, never in pages 2 and 3.
      const newcomers = [await runIn('pending', lister), await runIn('running', lister)];
      const second = await list(`?limit=3&cursor=${first.nextCursor}`);
      expect(second.runs.map((r) => r.id)).toEqual(expected.slice(3, 6));
      const third = await list(`?limit=3&cursor=${second.nextCursor}`);
      expect(third.runs.map((r) => r.id)).toEqual(expected.slice(6));
      expect(third.nextCursor).toBeNull();
      const seen = [...first.runs, ...second.runs, ...third.runs].map((r) => r.id);
      expect(new Set(seen).size).toBe(seen.length);
      expect((await list('?limit=2')).runs.map((r) => r.id).sort()).toEqual([...newcomers].sort());
      await prisma.run.deleteMany({ where: { id: { in: newcomers } } });
    });

    it('an exactly full last page says so with a null cursor on the next one', async () => {
      const first = await list('?limit=7');
      expect(first.runs).toHaveLength(7);
      // Whether another page follows is known from the extra row fetched, so no empty page.
      expect(first.nextCursor).toBeNull();
      const six = await list('?limit=6');
      expect((await list(`?limit=6&cursor=${six.nextCursor}`)).runs.map((r) => r.id)).toEqual(expected.slice(6));
    });

    it('filters by status, and pages within the filter', async () => {
      const failed = await list('?status=failed');
      expect(failed.runs.map((r) => r.status)).toEqual(['failed', 'failed']);
      expect(failed.runs[0]!.error).toEqual(failure);
      const completed = await list('?status=completed&limit=2');
      expect(completed.runs.map((r) => r.id)).toEqual(expected.filter((id) => completed.runs.some((r) => r.id === id)));
      const rest = await list(`?status=completed&limit=2&cursor=${completed.nextCursor}`);
      expect([...completed.runs, ...rest.runs].map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
      expect(rest.nextCursor).toBeNull();
      expect((await list('?status=cancelled')).runs).toEqual([]);
    });

    it.each([
      ['?limit=0', 'limit must be >= 1'],
      ['?limit=101', 'limit must be <= 100'],
      ['?limit=ten', 'limit must be integer'],
      ['?limit=1&limit=2', 'limit must be integer, got array'],
      ['?status=done', 'status must be one of "pending", "running", "completed", "failed", "cancelled", got "done"'],
      ['?cursor=bogus', 'cursor is not a cursor of this listing'],
      [`?cursor=${Buffer.from('2026-01-01T00:00:00.000Z|x').toString('base64url')}`, 'cursor is not a cursor of this listing'],
      ['?order=asc', 'unknown field "order" in request; allowed fields: limit, cursor, status'],
    ])('answers %s with 400 naming the parameter', async (query, message) => {
      const res = await request(server).get(`/v1/runs${query}`).set(bearer(lister)).expect(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.error).toContain(message);
    });

    it('needs a token with the "run" scope', async () => {
      expect((await request(server).get('/v1/runs').expect(401)).body.error).toContain('GET /v1/runs needs an access token');
      expect((await request(server).get('/v1/runs').set(bearer(reader)).expect(403)).body.code).toBe('insufficient_scope');
    });
  });

  describe('GET /v1/runs/:id/events', () => {
    /** A running run whose log holds run.started, step.started and one progress event. */
    async function runWithThreeEvents(): Promise<string> {
      const runId = await runIn('running');
      await bus.append(runId, started(runId));
      await bus.append(runId, { type: 'step.started', nodeId: 'gen' });
      await bus.append(runId, progress('10%'));
      return runId;
    }

    /** Reads `count` messages of an open stream, then appends `later` and reads to the end. */
    async function replayThenLive(res: Response, runId: string, count: number, later: RunEvent[]): Promise<SseMessage[]> {
      const messages: SseMessage[] = [];
      let appended = false;
      for await (const message of sseMessages(res.body!)) {
        messages.push(message);
        if (!appended && messages.length === count) {
          appended = true;
          for (const event of later) await bus.append(runId, event);
        }
      }
      return messages;
    }

    it.each([
      ['Last-Event-ID', { lastEventId: '1' }],
      ['?after=', { after: '1' }],
      ['both, agreeing', { lastEventId: '1', after: '1' }],
    ])('resumes after %s: the missing events once, then live ones until [DONE]', async (_how, resume) => {
      const runId = await runWithThreeEvents();
      const res = await openEvents(runId, resume);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.headers.get('cache-control')).toMatch(/no-cache/);
      expect(res.headers.get('x-accel-buffering')).toBe('no');
      const messages = await replayThenLive(res, runId, 2, [progress('90%'), { type: 'run.completed', outputs }]);
      expect(parsed(messages)).toEqual([
        { id: '2', event: { type: 'step.started', nodeId: 'gen' } },
        { id: '3', event: progress('10%') },
        { id: '4', event: progress('90%') },
        { id: '5', event: { type: 'run.completed', outputs } },
        { id: undefined, data: '[DONE]' },
      ]);
      for (const m of parsed(messages)) if ('event' in m) expectValid(RunEventSchema, m.event);
    });

    it('replays everything from the start without a resume point, up to a failure', async () => {
      const runId = await runWithThreeEvents();
      const res = await openEvents(runId);
      const messages = await replayThenLive(res, runId, 3, [{ type: 'run.failed', error: failure }]);
      expect(messages.map((m) => m.id)).toEqual(['1', '2', '3', '4', undefined]);
      expect(parsed(messages)[3]).toEqual({ id: '4', event: { type: 'run.failed', error: failure } });
    });

    it('ends at once with [DONE] when resumed at the terminal event of a finished run, and sends the ending from its record when resumed past it', async () => {
      const runId = await runIn('completed');
      await bus.append(runId, started(runId));
      await bus.append(runId, { type: 'run.completed', outputs });
      for (const resume of [{ lastEventId: '2' }, { after: '2' }]) {
        expect(parsed(await readSse(await openEvents(runId, resume)))).toEqual([{ id: undefined, data: '[DONE]' }]);
      }
      // Past the log's end: not the log the client read (Redis restarted empty and the run's
      // events went on in a new one), so the client never saw this ending; the record has it.
      expect(parsed(await readSse(await openEvents(runId, { lastEventId: '9' })))).toEqual([{ id: '10', event: { type: 'run.completed', outputs } }, { id: undefined, data: '[DONE]' }]);
      expect(parsed(await readSse(await openEvents(runId, { after: '1' })))).toEqual([{ id: '2', event: { type: 'run.completed', outputs } }, { id: undefined, data: '[DONE]' }]);
    });

    it("sends a finished run's terminal event from its record when its event log has expired", async () => {
      const completed = await runIn('completed');
      await bus.append(completed, started(completed));
      await bus.append(completed, { type: 'run.completed', outputs });
      await connections[0]!.del(runEventKeys(prefix, completed).log);
      expect(await bus.lastSeq(completed)).toBe(0);
      expect(parsed(await readSse(await openEvents(completed)))).toEqual([{ id: '1', event: { type: 'run.completed', outputs } }, { id: undefined, data: '[DONE]' }]);
      // Resumed: the event takes the id after the resume point.
      expect(parsed(await readSse(await openEvents(completed, { lastEventId: '7' })))).toEqual([
        { id: '8', event: { type: 'run.completed', outputs } },
        { id: undefined, data: '[DONE]' },
      ]);

      const failed = await runIn('failed');
      expect(parsed(await readSse(await openEvents(failed)))).toEqual([{ id: '1', event: { type: 'run.failed', error: failure } }, { id: undefined, data: '[DONE]' }]);
    });

    it("ends a finished run's stream with its record's terminal event when the log never got one", async () => {
      // A process died between finishing the run in Postgres and appending the event.
      const runId = await runIn('completed');
      await bus.append(runId, started(runId));
      await bus.append(runId, progress('done'));
      const begun = Date.now();
      expect(parsed(await readSse(await openEvents(runId)))).toEqual([
        { id: '1', event: started(runId) },
        { id: '2', event: progress('done') },
        { id: '3', event: { type: 'run.completed', outputs } },
        { id: undefined, data: '[DONE]' },
      ]);
      expect(Date.now() - begun).toBeGreaterThanOrEqual(250);
      // A terminal event the log does get is sent once, as it is.
      const late = await runIn('failed');
      await bus.append(late, started(late));
      const res = await openEvents(late);
      await eventually(() => service.runtime.bus.stats().streams === 1, { what: 'the stream to subscribe' });
      await bus.append(late, { type: 'run.failed', error: failure });
      expect(parsed(await readSse(res))).toEqual([{ id: '1', event: started(late) }, { id: '2', event: { type: 'run.failed', error: failure } }, { id: undefined, data: '[DONE]' }]);
    });

    it("ends a running run's stream with its record's terminal event when the run finishes in Postgres and the log never gets one", async () => {
      const runId = await runIn('running');
      await bus.append(runId, started(runId));
      const res = await openEvents(runId);
      await eventually(() => service.runtime.bus.stats().streams === 1, { what: 'the stream to subscribe' });
      // Checks of the record find the run running: the stream waits, however long the silence.
      await stillTrueFor(() => service.runtime.bus.stats().streams === 1, 700, { what: 'the stream of the running run' });
      // A worker fails the run in Postgres and dies before appending run.failed.
      await runs.failRun(runId, failure);
      expect(parsed(await readSse(res))).toEqual([{ id: '1', event: started(runId) }, { id: '2', event: { type: 'run.failed', error: failure } }, { id: undefined, data: '[DONE]' }]);
    });

    it('follows a run that has no events yet from its first one', async () => {
      const runId = await runIn('pending');
      const res = await openEvents(runId);
      await eventually(() => service.runtime.bus.stats().streams === 1, { what: 'the stream to subscribe' });
      await bus.append(runId, started(runId));
      await bus.append(runId, { type: 'run.failed', error: failure });
      expect((await readSse(res)).map((m) => m.id)).toEqual(['1', '2', undefined]);
    });

    it('lets go of the subscription when the client goes away mid-stream', async () => {
      const runId = await runWithThreeEvents();
      const res = await openEvents(runId);
      for await (const message of sseMessages(res.body!)) if (message.id === '3') break; // cancels the body
      // afterEach checks that the bus released the stream.
    });

    it("follows a running run resumed past its log's end, and ends it from the record when the log's ending is below that point", async () => {
      // After Redis restarted empty the run's events go on in a new log whose ids start again:
      // the client's position (9) is past this log's end (3). Nothing below it is sent again.
      const runId = await runWithThreeEvents();
      const res = await openEvents(runId, { lastEventId: '9' });
      expect(res.status).toBe(200);
      await eventually(() => service.runtime.bus.stats().streams === 1, { what: 'the stream to subscribe' });
      await bus.append(runId, progress('50%'));
      await runs.failRun(runId, failure);
      // run.failed lands at seq 5, below the client's 9: the stream takes the ending from the record.
      await bus.append(runId, { type: 'run.failed', error: failure });
      expect(parsed(await readSse(res))).toEqual([{ id: '10', event: { type: 'run.failed', error: failure } }, { id: undefined, data: '[DONE]' }]);
    });

    it.each([
      [{ lastEventId: 'abc' }, 'the Last-Event-ID header must be a non-negative integer'],
      [{ lastEventId: '-1' }, 'the Last-Event-ID header must be a non-negative integer'],
      [{ after: '-1' }, 'after must be >= 0'],
      [{ after: 'x' }, 'after must be integer'],
      [{ lastEventId: '2', after: '1' }, 'Last-Event-ID (2) and the "after" parameter (1) disagree'],
    ])('answers a bad resume point %j with 400', async (resume, message) => {
      const res = await openEvents(await runWithThreeEvents(), resume);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { code: string; error: string };
      expect(body.code).toBe('validation_failed');
      expect(body.error).toContain(message);
    });

    it("answers 404 for another organization's run and 401/403 without a run-scoped token", async () => {
      const theirs = await runIn('running', stranger);
      await bus.append(theirs, started(theirs));
      const res = await openEvents(theirs);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ code: 'not_found', error: `no run with id "${theirs}" in your organization` });
      expect((await openEvents('nope')).status).toBe(404);
      expect((await openEvents(theirs, { account: reader })).status).toBe(403);
      expect((await fetch(`${server}/v1/runs/${theirs}/events`)).status).toBe(401);
    });
  });
});
