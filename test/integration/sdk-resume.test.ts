import { createParser } from 'eventsource-parser';
import { Client, ConnectionError, startRun, type RunEventWithSeq } from '../../services/sdk/src';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy';
import { pauseChain, pauseNode } from '../support/test-nodes';
import { bearer, startTestService, type TestService } from '../support/service';

/**
 * The SDK's run streams survive their connection: a proxy between the SDK and the service cuts
 * the stream mid-run, blackholes it, or refuses reconnections, and the events the SDK yields are
 * still exactly the run's log (every seq once, in order), or the run's record settles the result.
 */
describe('SDK stream resumption', () => {
  let service: TestService;
  let proxy: FaultProxy;
  let client: Client;

  beforeAll(async () => {
    service = await startTestService({ nodes: [pauseNode], env: { SSE_HEARTBEAT_MS: '200' } });
  });

  beforeEach(async () => {
    proxy = await startFaultProxy(service.url);
    client = new Client({ apiKey: service.account.token, baseUrl: proxy.url, resume: { initialDelayMs: 20, maxAttempts: 4, idleTimeoutMs: 1_000 } });
  });

  afterEach(async () => {
    await proxy?.close();
  });

  afterAll(async () => {
    await service?.close();
  });

  /** The run's whole log as the service replays it to a fresh reader (no Last-Event-ID). */
  async function logOf(runId: string): Promise<{ seq: number; type: string }[]> {
    const answer = await fetch(`${service.url}/v1/runs/${runId}/events`, { headers: bearer(service.account.token) });
    const text = await answer.text();
    const events: { seq: number; type: string }[] = [];
    const parser = createParser({
      onEvent(message) {
        if (message.data !== '[DONE]') events.push({ seq: Number(message.id), type: (JSON.parse(message.data) as { type: string }).type });
      },
    });
    parser.feed(text);
    return events;
  }

  function summary(events: RunEventWithSeq[]): { seq: number; type: string }[] {
    return events.map((e) => ({ seq: e.seq, type: e.type }));
  }

  it('reconnects with Last-Event-ID after a cut mid-run: nothing missed, nothing repeated', async () => {
    // Cut the POST's stream right after the first step completed.
    proxy.cutWhen((bytes) => bytes.includes('"step.completed"'));
    const handle = startRun(client, { workflow: pauseChain(3, 150) });
    const seen: RunEventWithSeq[] = [];
    for await (const event of handle.events()) seen.push(event);
    const runId = await handle.runId;
    expect(proxy.connections).toBeGreaterThanOrEqual(2);
    // The reconnection asked for what follows the last event it had, not for the whole log again.
    const resumed = proxy.heads.find((head) => head.startsWith(`GET /v1/runs/${runId}/events`));
    const lastEventId = Number(/last-event-id: (\d+)/i.exec(resumed ?? '')?.[1]);
    expect(seen.find((e) => e.type === 'step.completed')?.seq).toBeLessThanOrEqual(lastEventId);
    expect(summary(seen)).toEqual(await logOf(runId));
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.filter((e) => e.type === 'step.completed')).toHaveLength(3);
    expect(await handle.result()).toEqual({ out: { kind: 'int', value: 3 } });
  });

  it('takes a silent (half-open) connection for dead and resumes on a fresh one', async () => {
    const handle = startRun(client, { workflow: pauseChain(3, 300) });
    const runId = await handle.runId;
    // Heartbeats stop too: only the SDK's idle watch can tell this connection is dead.
    proxy.freezeOpen();
    const seen: RunEventWithSeq[] = [];
    for await (const event of handle.events()) seen.push(event);
    expect(proxy.connections).toBeGreaterThanOrEqual(2);
    expect(summary(seen)).toEqual(await logOf(runId));
    expect(await handle.result()).toEqual({ out: { kind: 'int', value: 3 } });
  });

  it('falls back to the run record when reconnections keep failing, once the run has ended', async () => {
    proxy.cutWhen((bytes) => bytes.includes('"step.started"'));
    // Reconnections spread over about a second: the short run has ended when the record is read.
    const patient = new Client({ apiKey: service.account.token, baseUrl: proxy.url, resume: { initialDelayMs: 200, maxAttempts: 3 } });
    const handle = startRun(patient, { workflow: pauseChain(2, 20) });
    const runId = await handle.runId;
    // Every reconnection to the events route is refused; the record route still answers.
    proxy.refuseRequests = (head) => /^GET \/v1\/runs\/[^/ ]+\/events/.test(head);
    expect(await handle.result()).toEqual({ out: { kind: 'int', value: 2 } });
    // The events it could not receive are not invented: it yielded only what it saw.
    const seen = await collect(handle.events());
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.some((e) => e.type === 'run.completed')).toBe(false);
    const record = await client.routes['runs.get']({ id: runId });
    expect(record.status).toBe('completed');
  });

  it('gives up with a ConnectionError naming the run when the service stays unreachable', async () => {
    proxy.cutWhen((bytes) => bytes.includes('"run.started"'));
    const handle = startRun(client, { workflow: pauseChain(2, 2_000) });
    const runId = await handle.runId;
    proxy.mode = 'refuse';
    const failure = await handle.result().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConnectionError);
    expect((failure as ConnectionError).message).toContain(runId);
    // The run went on without its follower.
    proxy.mode = 'pass';
    const record = await client.routes['runs.events']({ id: runId });
    expect(record.status).toBe('completed');
  });

  it('stops following (not the run) when the caller aborts', async () => {
    const controller = new AbortController();
    const handle = startRun(client, { workflow: pauseChain(2, 300) }, { signal: controller.signal });
    const runId = await handle.runId;
    controller.abort(new Error('caller stopped'));
    await expect(handle.result()).rejects.toThrow('caller stopped');
    const record = await client.routes['runs.events']({ id: runId });
    expect(record.status).toBe('completed');
  });
});

async function collect<T>(events: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const event of events) all.push(event);
  return all;
}
