import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Run, RunSummary } from '../../../contract';
import type * as Api from '../lib/api';
import { NotFoundError } from '../../../sdk/src';

const runsList = vi.fn();
const runsGet = vi.fn();
vi.mock('../lib/api', async (importOriginal) => {
  const actual = await importOriginal<typeof Api>();
  return {
    ...actual,
    client: { routes: { 'runs.list': (...a: unknown[]) => runsList(...a), 'runs.get': (...a: unknown[]) => runsGet(...a) }, follow: vi.fn() },
  };
});

vi.mock('../editor/graph-view', () => ({
  GraphView: (p: { steps?: Record<string, { status: string }> }) => (
    <div data-testid="graph">{Object.entries(p.steps ?? {}).map(([id, v]) => `${id}:${v.status}`).join(' ')}</div>
  ),
}));

const { RunsPage, splitRef, runDuration, workflowFilter } = await import('./runs-page');
const { RunDetailPage, mergeLive } = await import('./run-detail-page');

function summary(i: number, over: Partial<RunSummary> = {}): RunSummary {
  return {
    id: `00000000-0000-4000-8000-00000000000${i}`,
    status: 'completed',
    error: null,
    costUsd: 0.000151,
    maxCostUsd: 0.5,
    createdAt: '2026-11-25T01:00:00.000Z',
    finishedAt: '2026-11-25T01:00:01.500Z',
    workflowRef: null,
    workflowId: null,
    workflowName: null,
    ...over,
  };
}

function at(path: string) {
  const router = createMemoryRouter(
    [
      { path: '/runs', element: <RunsPage /> },
      { path: '/runs/:id', element: <RunDetailPage /> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

describe('RunsPage', () => {
  beforeEach(() => {
    runsList.mockReset();
    runsGet.mockReset();
  });

  it('lists runs with workflow, version, cost / cap and duration, and loads more', async () => {
    runsList.mockResolvedValueOnce({
      runs: [summary(1, { workflowRef: 'acme/voice@1.2.0', workflowId: 'w1', workflowName: 'Voice' }), summary(2, { status: 'failed' }), summary(4, { workflowId: 'w2', workflowName: 'Speak and draw' })],
      nextCursor: 'c1',
    });
    runsList.mockResolvedValueOnce({ runs: [summary(3, { status: 'running', finishedAt: null })], nextCursor: null });
    at('/runs');
    const table = await screen.findByRole('table');
    const rows = within(table).getAllByRole('row');
    expect(rows).toHaveLength(4);
    expect(within(rows[3]!).getByText('Speak and draw · draft')).toBeTruthy();
    expect(within(rows[1]!).getByText('acme/voice')).toBeTruthy();
    expect(within(rows[1]!).getByText('1.2.0')).toBeTruthy();
    expect(within(rows[1]!).getByText('1.5 s')).toBeTruthy();
    expect(within(rows[2]!).getByText('inline')).toBeTruthy();
    expect(within(rows[2]!).getByText('failed').className).toContain('badge failed');
    expect(within(rows[1]!).getByRole('link').getAttribute('href')).toBe('/runs/00000000-0000-4000-8000-000000000001');
    fireEvent.click(screen.getByRole('button', { name: 'Load more' }));
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(5));
    expect(runsList).toHaveBeenLastCalledWith({ limit: 25, cursor: 'c1' });
    expect(screen.queryByRole('button', { name: 'Load more' })).toBeNull();
    expect(screen.getByText('4 runs, all shown')).toBeTruthy();
  });

  it('filters by status and workflow address (kept in the URL)', async () => {
    runsList.mockResolvedValue({ runs: [], nextCursor: null });
    const router = at('/runs');
    await screen.findByText(/No runs yet/);
    fireEvent.change(screen.getByRole('combobox', { name: 'Status' }), { target: { value: 'failed' } });
    await waitFor(() => expect(runsList).toHaveBeenLastCalledWith({ limit: 25, status: 'failed' }));
    fireEvent.change(screen.getByRole('searchbox', { name: 'Workflow' }), { target: { value: ' acme/voice ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Filter' }));
    await waitFor(() => expect(runsList).toHaveBeenLastCalledWith({ limit: 25, status: 'failed', workflow: 'acme/voice' }));
    expect(router.state.location.search).toBe('?status=failed&workflow=acme%2Fvoice');
    expect(await screen.findByText('No runs match these filters.')).toBeTruthy();
  });

  it("shows the service's words when the list fails", async () => {
    runsList.mockRejectedValue(new Error('insufficient scope: run'));
    at('/runs');
    expect((await screen.findByRole('alert')).textContent).toBe('insufficient scope: run');
  });
});

describe('helpers', () => {
  it('reads a workflow filter', () => {
    expect(workflowFilter(' acme/voice@1.2.0 ')).toEqual({ ok: true, value: 'acme/voice' });
    expect(workflowFilter('')).toEqual({ ok: true, value: '' });
    expect(workflowFilter('not a workflow!')).toEqual({ ok: false, message: 'Give a workflow address (org/workflow) or a workflow id.' });
    expect(workflowFilter('0B8F7C62-1D1E-4F3A-9C55-2F6F0E4B8A10')).toEqual({ ok: true, value: '0B8F7C62-1D1E-4F3A-9C55-2F6F0E4B8A10' });
    expect(workflowFilter('acme')).toMatchObject({ ok: false });
  });
  it('splits a workflow ref', () => {
    expect(splitRef('acme/voice@1.2.0')).toEqual({ address: 'acme/voice', version: '1.2.0' });
    expect(splitRef(null)).toBeNull();
    expect(splitRef(undefined)).toBeNull();
  });
  it('measures a run, or how long it has run so far', () => {
    expect(runDuration(summary(1))).toBe(1500);
    expect(runDuration(summary(1, { finishedAt: null }), Date.parse('2026-11-25T01:00:03.000Z'))).toBe(3000);
  });
});

const record: Run = {
  id: '00000000-0000-4000-8000-000000000009',
  status: 'failed',
  steps: [
    { nodeId: 'speak', status: 'completed', costUsd: 0.000051, ms: 69 },
    { nodeId: 'wave', status: 'failed', costUsd: 0, ms: 3, error: { code: 'node_failed', message: 'the audio is empty' } },
  ],
  outputs: null,
  error: { code: 'node_failed', message: 'the audio is empty' },
  costUsd: 0.000051,
  maxCostUsd: 0.1,
  createdAt: '2026-11-25T01:00:00.000Z',
  startedAt: '2026-11-25T01:00:00.000Z',
  finishedAt: '2026-11-25T01:00:00.250Z',
  deadlineAt: null,
  webhook: null,
  workflowRef: 'acme/voice@2.0.0',
  workflowId: '00000000-0000-4000-8000-0000000000aa',
  workflowName: 'Voice',
  workflow: { version: 2, nodes: [{ id: 'speak', uses: 'speech-espeak', label: 'Speak' }, { id: 'wave', uses: 'audio-waveform' }] },
};

describe('RunDetailPage', () => {
  beforeEach(() => {
    runsGet.mockReset();
  });

  it('shows status, money, steps with errors, and the graph', async () => {
    runsGet.mockResolvedValue(record);
    at(`/runs/${record.id}`);
    await screen.findByRole('heading', { name: /acme\/voice/ });
    expect(screen.getByText('$0.000051 / $0.10')).toBeTruthy();
    expect(screen.getByText('250 ms')).toBeTruthy();
    expect(screen.getByText('Speak')).toBeTruthy();
    expect(screen.getAllByText(/the audio is empty/).length).toBeGreaterThan(0);
    expect(screen.getByText('No outputs: the run did not complete.')).toBeTruthy();
    expect(screen.getByTestId('graph').textContent).toBe('speak:completed wave:failed');
  });

  it("shows the run's webhook and each delivery: its status, attempts and last answer", async () => {
    runsGet.mockResolvedValue({
      ...record,
      webhook: {
        url: 'https://hooks.example.com/svc',
        events: ['run.completed', 'run.failed'],
        deliveries: [
          { seq: 1, type: 'run.started', status: 'delivered', attempts: 1, lastStatusCode: 200, lastError: null, lastAttemptAt: '2026-11-25T01:00:00.300Z', nextAttemptAt: null, deliveredAt: '2026-11-25T01:00:00.300Z' },
          { seq: 4, type: 'run.failed', status: 'pending', attempts: 2, lastStatusCode: 503, lastError: 'answered 503: busy', lastAttemptAt: '2026-11-25T01:00:01.000Z', nextAttemptAt: '2026-11-25T01:00:31.000Z', deliveredAt: null },
        ],
      },
    });
    at(`/runs/${record.id}`);
    const section = await screen.findByRole('region', { name: 'Webhook' });
    expect(section.textContent).toContain('https://hooks.example.com/svc · run.completed, run.failed');
    expect(section.textContent).toContain('4: run.failed');
    expect(section.textContent).toContain('answered 503: busy');
    expect(section.textContent).toContain('answered 200');
    expect(section.querySelectorAll('tbody tr').length).toBe(2);
  });

  it('names an editor draft run by its workflow, linking to the editor', async () => {
    runsGet.mockResolvedValue({ ...record, workflowRef: null, workflowName: 'Speak and draw' });
    at(`/runs/${record.id}`);
    await screen.findByRole('heading', { name: /Speak and draw · draft/ });
    expect(screen.getByRole('link', { name: 'Speak and draw · draft' }).getAttribute('href')).toBe('/workflows/00000000-0000-4000-8000-0000000000aa');
  });

  it("shows the service's words for an unknown run", async () => {
    runsGet.mockRejectedValue(new NotFoundError('no run with id "x" in your organization', { status: 404, code: 'not_found' }));
    at('/runs/x');
    expect((await screen.findByRole('alert')).textContent).toBe('no run with id "x" in your organization');
    expect(screen.getByRole('link', { name: 'All runs' }).getAttribute('href')).toBe('/runs');
  });
});

describe('mergeLive', () => {
  it('lays live step views over the record', () => {
    const running: Run = { ...record, status: 'running', error: null, finishedAt: null, steps: [{ nodeId: 'speak', status: 'running', costUsd: 0, ms: null }] };
    const { run, steps } = mergeLive(running, {
      runId: record.id,
      lastSeq: 3,
      phase: 'completed',
      steps: { speak: { status: 'completed', costUsd: 0.25, ms: 9 } },
      order: ['speak'],
      costMicros: 250_000,
      outputs: { out: { kind: 'int', value: 1 } },
      error: null,
      startedAtMs: 0,
      finishedAtMs: 1,
    });
    expect(run.status).toBe('completed');
    expect(run.steps[0]).toEqual({ nodeId: 'speak', status: 'completed', costUsd: 0.25, ms: 9 });
    expect(run.costUsd).toBe(0.25);
    expect(run.outputs).toEqual({ out: { kind: 'int', value: 1 } });
    expect(steps.speak!.status).toBe('completed');
  });
});
