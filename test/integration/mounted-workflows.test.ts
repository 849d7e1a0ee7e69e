import type { RunEvent, Workflow } from '../../services/contract';
import { RunRepository } from '../../services/store';
import { bearer, publishWorkflow, startTestService, type TestService } from '../support/service';
import { readSse } from '../support/sse';

/**
 * Mounted workflows end to end: published through the editor endpoints, mounted by address in
 * another workflow, run through `POST /v1/runs` by the real workers.
 */
describe('mounted workflows', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  const headers = () => ({ ...bearer(service.account.token), 'Content-Type': 'application/json' });


  async function run(workflow: Workflow, maxCostUsd?: number): Promise<{ status: number; events: RunEvent[] }> {
    const res = await fetch(`${service.url}/v1/runs`, { method: 'POST', headers: headers(), body: JSON.stringify({ workflow, ...(maxCostUsd === undefined ? {} : { maxCostUsd }) }) });
    if (res.status !== 200) return { status: res.status, events: [] };
    const messages = await readSse(res);
    expect(messages.at(-1)?.data).toBe('[DONE]');
    return { status: 200, events: messages.slice(0, -1).map((m) => JSON.parse(m.data) as RunEvent) };
  }

  /** n → ((n + n) + 1) + 1: three steps of 1 micro-USD each. */
  const grow: Workflow = {
    version: 2,
    nodes: [
      { id: 'n', uses: 'input', outputType: 'FLOAT' },
      { id: 'twice', uses: 'math-add', inputs: { a: '${n.value}', b: '${n.value}' } },
      { id: 'plus', uses: 'math-add', inputs: { a: '${twice.result}', b: 1 } },
      { id: 'again', uses: 'math-add', inputs: { a: '${plus.result}', b: 1 } },
      { id: 'result', uses: 'output', inputs: { value: '${again.result}' } },
    ],
  };

  beforeAll(async () => {
    await publishWorkflow(service, 'grow', grow);
  });

  it('runs the latest version of a mounted workflow inside the run, its steps shown as progress of the mount node', async () => {
    const { events } = await run({
      version: 2,
      nodes: [
        { id: 'g', uses: `${service.account.orgSlug}/grow`, inputs: { n: 5 } },
        { id: 'half', uses: 'math-divide', inputs: { a: '${g.result}', b: 2 } },
        { id: 'out', uses: 'output', inputs: { value: '${half.result}' } },
      ],
    });
    expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { out: { kind: 'float', value: 6 } } });
    const progress = events.filter((e) => e.type === 'step.progress' && e.nodeId === 'g').map((e) => (e as { message: string }).message);
    expect(progress).toEqual(expect.arrayContaining(['twice started', 'plus started', 'again started']));
    expect(progress.some((m) => /^again completed \(\$0\.000001, \d+ ms\)$/.test(m))).toBe(true);
    // No event names a spliced step: the stream speaks of the nodes the caller wrote.
    expect(events.some((e) => 'nodeId' in e && e.nodeId.includes('__'))).toBe(false);
    const runId = (events[0] as { runId: string }).runId;
    const record = (await new RunRepository(service.database).getRun(runId))!;
    expect(record.spentMicros).toBe(4);
    expect(record.steps.map((s) => s.nodeId).sort()).toEqual(['g__again', 'g__plus', 'g__twice', 'half']);
  });

  it('frames the mount node with its own step.started and step.completed, usage being the mounted steps’ total', async () => {
    const { events } = await run({
      version: 2,
      nodes: [
        { id: 'g', uses: `${service.account.orgSlug}/grow`, inputs: { n: 1 } },
        { id: 'out', uses: 'output', inputs: { value: '${g.result}' } },
      ],
    });
    expect(events.at(-1)).toEqual({ type: 'run.completed', outputs: { out: { kind: 'float', value: 4 } } });
    const ofMount = events.filter((e) => 'nodeId' in e && e.nodeId === 'g');
    expect(ofMount.filter((e) => e.type === 'step.started')).toEqual([{ type: 'step.started', nodeId: 'g' }]);
    const completed = ofMount.filter((e) => e.type === 'step.completed');
    expect(completed).toEqual([{ type: 'step.completed', nodeId: 'g', usage: { costUsd: 0.000003, ms: expect.any(Number) } }]);
    // Started first, completed last: the inner steps are progress in between.
    expect(ofMount[0]!.type).toBe('step.started');
    expect(ofMount.at(-1)!.type).toBe('step.completed');
    expect(ofMount.slice(1, -1).every((e) => e.type === 'step.progress')).toBe(true);
    expect(ofMount.filter((e) => e.type === 'step.progress')).toHaveLength(6);
  });

  it('counts the mounted workflow’s steps against the run’s cap', async () => {
    const { events } = await run(
      {
        version: 2,
        nodes: [
          { id: 'g', uses: `${service.account.orgSlug}/grow@latest`, inputs: { n: 1 } },
          { id: 'out', uses: 'output', inputs: { value: '${g.result}' } },
        ],
      },
      0.000002,
    );
    expect(events.at(-2)).toMatchObject({ type: 'step.failed', nodeId: 'g', error: { code: 'spend_cap_exceeded' } });
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'spend_cap_exceeded' } });
    const runId = (events[0] as { runId: string }).runId;
    expect((await new RunRepository(service.database).getRun(runId))!.spentMicros).toBe(2);
  });

  it('fails a run whose mounted workflow is pinned to a version, at run time', async () => {
    const { status, events } = await run({
      version: 2,
      nodes: [
        { id: 'g', uses: `${service.account.orgSlug}/grow@1.0.0`, inputs: { n: 1 } },
        { id: 'out', uses: 'output', inputs: { value: '${g.result}' } },
      ],
    });
    expect(status).toBe(200);
    expect(events.map((e) => e.type)).toEqual(['run.started', 'run.failed']);
    expect(events[1]).toMatchObject({ error: { code: 'mount_pinned', message: expect.stringContaining('always runs its latest version') } });
  });

  it('fails a run whose mounted workflows mount themselves, instead of hanging', async () => {
    await publishWorkflow(service, 'ouroboros', {
      version: 2,
      nodes: [
        { id: 'self', uses: `${service.account.orgSlug}/ouroboros`, inputs: {} },
        { id: 'out', uses: 'output', inputs: { value: '${self.out}' } },
      ],
    });
    const { events } = await run({ version: 2, nodes: [{ id: 'o', uses: `${service.account.orgSlug}/ouroboros` }, { id: 'out', uses: 'output', inputs: { value: '${o.out}' } }] });
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'mount_recursion' } });
  });

  it('answers 404 before the stream for a mounted workflow that does not exist, and 400 for a wrong input', async () => {
    expect((await run({ version: 2, nodes: [{ id: 'm', uses: `${service.account.orgSlug}/nothing`, inputs: {} }, { id: 'out', uses: 'output', inputs: { value: '${m.x}' } }] })).status).toBe(404);
    const res = await fetch(`${service.url}/v1/runs`, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ workflow: { version: 2, nodes: [{ id: 'g', uses: `${service.account.orgSlug}/grow`, inputs: { count: 1 } }, { id: 'out', uses: 'output', inputs: { value: '${g.result}' } }] } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('has no input "count"');
  });
});
