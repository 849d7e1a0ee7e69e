import { RunListSchema, RunSchema, type RunEvent } from '../../services/contract';
import { issueToken } from '../../services/platform/access-token';
import { seedAccount } from '../support/fixtures';
import { bearer, startTestService, type TestService } from '../support/service';
import { adder, expectValid, jsonCall } from '../support/json-api';
import { readSse } from '../support/sse';

describe('POST /editor/workflows/:id/runs: the saved draft run under its workflow', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  const call = (method: string, path: string, body?: unknown, token = service.account.token) => jsonCall(service.url, method, path, body, token);

  async function createWorkflow(name: string, definition?: unknown): Promise<string> {
    const created = await call('POST', '/editor/workflows', { name, ...(definition === undefined ? {} : { definition }) });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }

  it('streams the draft run to run.completed and records it under the workflow, with no version', async () => {
    const id = await createWorkflow('Draft adder', adder(2, 3));
    const res = await fetch(`${service.url}/editor/workflows/${id}/runs`, { method: 'POST', headers: { ...bearer(service.account.token), 'Content-Type': 'application/json' }, body: JSON.stringify({ maxCostUsd: 0.5 }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await readSse(res)).filter((m) => m.data !== '[DONE]').map((m) => JSON.parse(m.data) as RunEvent);
    expect(events[0]!.type).toBe('run.started');
    expect(events.at(-1)).toMatchObject({ type: 'run.completed', outputs: { sum: { value: 5 } } });
    const runId = (events[0] as { runId: string }).runId;

    const record = await call('GET', `/v1/runs/${runId}`);
    expect(record.status).toBe(200);
    expectValid(RunSchema, record.body);
    expect(record.body).toMatchObject({ status: 'completed', workflowRef: null, workflowId: id, workflowName: 'Draft adder', workflow: adder(2, 3), maxCostUsd: 0.5 });

    const listing = await call('GET', '/v1/runs?limit=100');
    expectValid(RunListSchema, listing.body);
    expect(listing.body.runs.find((r: { id: string }) => r.id === runId)).toMatchObject({ workflowRef: null, workflowId: id, workflowName: 'Draft adder' });

    // The listing filtered by the workflow's id finds it (a workflow never published has no address).
    const byId = await call('GET', `/v1/runs?workflow=${id}`);
    expect(byId.status).toBe(200);
    expect(byId.body.runs.map((r: { id: string }) => r.id)).toEqual([runId]);

    // A plain inline run names no workflow.
    const inline = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: bearer(service.account.token), body: JSON.stringify({ workflow: adder(1, 1) }) });
    const inlineId = (JSON.parse((await readSse(inline))[0]!.data) as { runId: string }).runId;
    expect((await call('GET', `/v1/runs/${inlineId}`)).body).toMatchObject({ workflowRef: null, workflowId: null, workflowName: null });
  });

  it('answers 409 for a workflow without a draft, 404 for an unknown or another organization\'s workflow', async () => {
    const empty = await createWorkflow('No draft yet');
    const noDraft = await call('POST', `/editor/workflows/${empty}/runs`, {});
    expect(noDraft.status).toBe(409);
    expect(noDraft.body).toEqual({ code: 'conflict', error: expect.stringContaining('has no draft to run') });

    const mine = await createWorkflow('Mine', adder(1, 2));
    const other = await seedAccount(service.prisma, { slug: 'other', scopes: ['read', 'run'], balanceMicros: 1_000_000 });
    expect((await call('POST', `/editor/workflows/${mine}/runs`, {}, other.token)).status).toBe(404);
    expect((await call('POST', '/editor/workflows/00000000-0000-4000-8000-000000000000/runs', {})).status).toBe(404);
  });

  it('answers 403 insufficient_scope to a read-only token', async () => {
    const id = await createWorkflow('Read only', adder(1, 2));
    const issued = issueToken('personal');
    await service.prisma.accessToken.create({
      data: { userId: service.account.userId, orgId: service.account.orgId, name: 'reader', kind: 'personal', displayPrefix: issued.displayPrefix, tokenHash: issued.hash, scopes: ['read'] },
    });
    const refused = await call('POST', `/editor/workflows/${id}/runs`, {}, issued.value);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('insufficient_scope');
  });

  it("answers 400 with the engine's message for a draft the engine refuses, before any stream", async () => {
    const id = await createWorkflow('Unfinished', { version: 2, nodes: [{ id: 'gen', uses: 'no-such-node' }] });
    const problems = (await call('GET', `/editor/workflows/${id}`)).body.problems as { message: string }[];
    expect(problems.length).toBeGreaterThan(0);
    const refused = await call('POST', `/editor/workflows/${id}/runs`, {});
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('validation_failed');
    expect(refused.body.error).toContain('no-such-node');
  });
});
