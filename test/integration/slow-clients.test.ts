import { eventually, stillTrueFor } from '../support/eventually';
import { bearer, startTestService, type TestService } from '../support/service';
import { slowClient } from '../support/slow-client';
import { sseMessages, type SseMessage } from '../support/sse';

const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;

describe('slow clients', () => {
  let service: TestService;

  beforeAll(async () => {
    // ROLE=api: no step worker, so a run's stream stays open until the test starts one.
    service = await startTestService({
      env: { ROLE: 'api', HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HTTP_MAX_HEADER_BYTES: '4096' },
    });
  });

  afterAll(async () => {
    await service?.close();
  });

  it('disconnects a client that sends its headers too slowly, with 408, within HTTP_HEADERS_TIMEOUT_MS', async () => {
    const ended = await slowClient(service.url, 'GET /v1/nodes HTTP/1.1\r\nHost: svc.test\r\n', 'X-Slow: 1\r\n', 200, 10_000);
    expect(ended.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(ended.ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
  });

  it('disconnects a client that sends its body too slowly, with 408, within HTTP_REQUEST_TIMEOUT_MS', async () => {
    const head = [
      'POST /v1/runs HTTP/1.1',
      'Host: svc.test',
      `Authorization: Bearer ${service.account.token}`,
      'Content-Type: application/json',
      'Content-Length: 1000',
      '',
      '{',
    ].join('\r\n');
    const ended = await slowClient(service.url, head, ' ', 200, 10_000);
    expect(ended.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(ended.ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(await service.prisma.run.count({ where: { orgId: service.account.orgId } })).toBe(0);
  });

  it('answers headers larger than HTTP_MAX_HEADER_BYTES with 431', async () => {
    const res = await fetch(`${service.url}/v1/nodes`, { headers: { 'X-Big': 'x'.repeat(8000) } });
    expect(res.status).toBe(431);
  });

  it('keeps a run stream open longer than HTTP_REQUEST_TIMEOUT_MS, to its end', async () => {
    const workflow = { version: 2, nodes: [{ id: 'a', uses: 'math-add', inputs: { a: 2, b: 3 } }, { id: 'sum', uses: 'output', inputs: { value: '${a.result}' } }] };
    const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(service.account.token), body: JSON.stringify({ workflow }) });
    expect(res.status).toBe(200);
    const messages: SseMessage[] = [];
    let open = true;
    const reading = (async () => {
      for await (const message of sseMessages(res.body!)) messages.push(message);
    })().finally(() => (open = false));
    // No worker yet: the run waits, its stream open (heartbeats only) past the request timeout.
    await eventually(() => messages.length > 0, { what: 'run.started' });
    await stillTrueFor(() => open && messages.length === 1, REQUEST_TIMEOUT_MS + 1500, { what: 'the open stream with run.started only' });
    expect(messages.map((m) => JSON.parse(m.data).type)).toEqual(['run.started']);
    await service.extra({ ROLE: 'worker' });
    await reading;
    expect(messages.at(-1)?.data).toBe('[DONE]');
    expect(JSON.parse(messages.at(-2)!.data)).toMatchObject({ type: 'run.completed', outputs: { sum: { value: 5 } } });
  });
});
