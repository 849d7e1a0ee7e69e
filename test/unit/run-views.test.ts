import { RunEventSchema, RunListSchema, RunSchema, RunSummarySchema, validate } from '../../services/contract';
import { decodeRunCursor, encodeRunCursor } from '../../services/api/handlers/run-cursor';
import { runBody, runSummaryBody, type RunView } from '../../services/api/handlers/run-views';
import { terminalEventOf } from '../../services/runs';

type StoredRun = RunView & { orgId: string };

const created = new Date('2026-03-04T05:06:07.089Z');
const outputs = { image: { kind: 'image', ref: 'https://svc.example/blobs/runs/x/image.png?expires=1&signature=abc', mimeType: 'image/png' } };

function stored(overrides: Partial<StoredRun> = {}): StoredRun {
  return {
    id: '0b8f7c62-1d1e-4f3a-9c55-2f6f0e4b8a10',
    orgId: '5d3c0a7e-8f41-4b7e-a1c9-3e2d9f6b7a21',
    status: 'running',
    workflowRef: null,
    workflowId: null,
    workflowName: null,
    batchId: null,
    scheduleId: null,
    definition: { version: 2, nodes: [{ id: 'gen', uses: 'image.generate' }] },
    error: null,
    capMicros: 500_000,
    spentMicros: 12_345,
    createdAt: created,
    startedAt: new Date(created.getTime() + 20),
    finishedAt: null,
    deadlineAt: null,
    webhook: null,
    outputs: null,
    steps: [
      { nodeId: 'gen', status: 'completed', costMicros: 12_345, ms: 830, error: null },
      { nodeId: 'up', status: 'pending', costMicros: 0, ms: null, error: null },
    ],
    ...overrides,
  };
}

function expectValid(schema: Parameters<typeof validate>[0], value: unknown): void {
  const checked = validate(schema, value);
  expect(checked.ok ? 'valid' : checked.message).toBe('valid');
}

describe('run record and listing bodies', () => {
  it('answers a running run with USD money, ISO times, no outputs, and a body the contract accepts', () => {
    const body = runBody(stored());
    expectValid(RunSchema, body);
    expect(body).toEqual({
      id: '0b8f7c62-1d1e-4f3a-9c55-2f6f0e4b8a10',
      status: 'running',
      steps: [
        { nodeId: 'gen', status: 'completed', costUsd: 0.012345, ms: 830 },
        { nodeId: 'up', status: 'pending', costUsd: 0, ms: null },
      ],
      outputs: null,
      error: null,
      costUsd: 0.012345,
      maxCostUsd: 0.5,
      createdAt: '2026-03-04T05:06:07.089Z',
      startedAt: '2026-03-04T05:06:07.109Z',
      finishedAt: null,
      deadlineAt: null,
      webhook: null,
      workflowRef: null,
      workflowId: null,
      workflowName: null,
      batchId: null,
      scheduleId: null,
      workflow: { version: 2, nodes: [{ id: 'gen', uses: 'image.generate' }] },
    });
  });

  it('passes a completed run\'s stored outputs through unchanged', () => {
    const body = runBody(stored({ status: 'completed', outputs, finishedAt: new Date(created.getTime() + 900) }));
    expectValid(RunSchema, body);
    expect(body.outputs).toBe(outputs);
    expect(body.finishedAt).toBe('2026-03-04T05:06:07.989Z');
  });

  it('hides outputs of a run that is not completed, and gives a failed step and run their errors', () => {
    const error = { code: 'step_failed', message: 'gen failed: provider said no' };
    const body = runBody(
      stored({
        status: 'failed',
        outputs,
        error,
        finishedAt: created,
        steps: [{ nodeId: 'gen', status: 'failed', costMicros: 0, ms: 3, error: { code: 'provider_error', message: 'provider said no' } }],
      }),
    );
    expectValid(RunSchema, body);
    expect(body.outputs).toBeNull();
    expect(body.error).toEqual(error);
    expect(body.steps[0]).toEqual({ nodeId: 'gen', status: 'failed', costUsd: 0, ms: 3, error: { code: 'provider_error', message: 'provider said no' } });
  });

  it('lists a run without steps and outputs, in a page the contract accepts', () => {
    const summary = runSummaryBody(stored({ status: 'completed', outputs, finishedAt: created }));
    expectValid(RunSummarySchema, summary);
    expect(Object.keys(summary).sort()).toEqual(['batchId', 'costUsd', 'createdAt', 'error', 'finishedAt', 'id', 'maxCostUsd', 'scheduleId', 'status', 'workflowId', 'workflowName', 'workflowRef']);
    expectValid(RunListSchema, { runs: [summary], nextCursor: encodeRunCursor({ createdAt: created, id: summary.id }) });
    expectValid(RunListSchema, { runs: [], nextCursor: null });
  });

  it('rebuilds the terminal event of a finished run from its record, and none for an unfinished one', () => {
    const completed = terminalEventOf(stored({ status: 'completed', outputs }));
    expect(completed).toEqual({ type: 'run.completed', outputs });
    const failed = terminalEventOf(stored({ status: 'failed', error: { code: 'cap_exceeded', message: 'over' } }));
    expect(failed).toEqual({ type: 'run.failed', error: { code: 'cap_exceeded', message: 'over' } });
    const cancelled = terminalEventOf(stored({ status: 'cancelled' }));
    expect(cancelled).toMatchObject({ type: 'run.failed', error: { code: 'cancelled' } });
    for (const event of [completed, failed, cancelled]) expectValid(RunEventSchema, event);
    expect(terminalEventOf(stored({ status: 'pending' }))).toBeNull();
    expect(terminalEventOf(stored())).toBeNull();
  });
});

describe('the run listing cursor', () => {
  const id = '0b8f7c62-1d1e-4f3a-9c55-2f6f0e4b8a10';

  it('round-trips a position as base64url of "<createdAt>|<id>"', () => {
    const cursor = encodeRunCursor({ createdAt: created, id });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(cursor, 'base64url').toString()).toBe(`2026-03-04T05:06:07.089Z|${id}`);
    expect(decodeRunCursor(cursor)).toEqual({ createdAt: created, id });
  });

  it.each([
    ['not base64url', 'a+b/c='],
    ['no separator', Buffer.from('2026-03-04T05:06:07.089Z').toString('base64url')],
    ['a bad id', Buffer.from('2026-03-04T05:06:07.089Z|nope').toString('base64url')],
    ['a time without milliseconds', Buffer.from(`2026-03-04T05:06:07Z|${id}`).toString('base64url')],
    ['a day that does not exist', Buffer.from(`2026-02-30T05:06:07.089Z|${id}`).toString('base64url')],
    ['a third part', Buffer.from(`2026-03-04T05:06:07.089Z|${id}|x`).toString('base64url')],
    ['empty', ''],
  ])('refuses a cursor with %s', (_what, cursor) => {
    expect(decodeRunCursor(cursor)).toBeNull();
  });
});
