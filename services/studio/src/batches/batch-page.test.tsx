import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Batch, BatchRow } from '../../../contract';
import type * as Api from '../lib/api';

const routes = {
  'batches.get': vi.fn(),
  'batches.list': vi.fn(),
  'batches.rows': vi.fn(),
  'batches.cancel': vi.fn(),
  'batches.retry': vi.fn(),
  'batches.results': vi.fn(),
};
vi.mock('../lib/api', async (importOriginal) => {
  const actual = await importOriginal<typeof Api>();
  return { ...actual, client: { routes } };
});

const { BatchPage } = await import('./batch-page');
const { BatchesPage } = await import('./batches-page');
const { capBindsConcurrency, progressLine, progressSegments, canRetry, formatSeconds } = await import('./batch-view');

function batch(over: Partial<Batch> = {}): Batch {
  return {
    id: '11111111-2222-4333-8444-555555555555',
    status: 'running',
    attempt: 1,
    workflowRef: 'acme/caption@1.0.0',
    workflowId: null,
    workflowVersionId: null,
    rows: { total: 200, pending: 100, running: 20, completed: 70, failed: 10, cancelled: 0, skipped: 2 },
    maxCostUsd: 10,
    rowMaxCostUsd: 0.05,
    spentUsd: 4.25,
    heldUsd: 1,
    concurrency: 20,
    rowsPerSecond: 12.5,
    etaSeconds: 96,
    stopReason: null,
    skippedRows: [{ row: 7, field: 'image', message: 'expected a URL' }],
    deadlineAt: null,
    webhook: null,
    createdAt: '2026-12-07T01:00:00.000Z',
    attemptStartedAt: '2026-12-07T01:00:00.000Z',
    finishedAt: null,
    ...over,
  };
}

const failedRow = (row: number): BatchRow => ({ row, status: 'failed', runId: `00000000-0000-4000-8000-0000000000${String(row).padStart(2, '0')}`, attempts: 1, costUsd: 0.01, outputs: null, error: { code: 'step_failed', message: `row ${row} image unreadable` }, finishedAt: '2026-12-07T01:00:05.000Z' });

function at(path: string) {
  const router = createMemoryRouter(
    [
      { path: '/batches', element: <BatchesPage /> },
      { path: '/batches/:id', element: <BatchPage /> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
}

describe('batch view helpers', () => {
  it('says how far, how fast and how long still; segments by status', () => {
    expect(progressLine(batch())).toBe('80 of 200 rows ended · 13 rows/s · about 2 min left');
    expect(progressLine(batch({ status: 'completed', rowsPerSecond: 40, etaSeconds: null }))).toBe('80 of 200 rows ended · 40 rows/s');
    expect(progressSegments(batch())).toEqual({ completed: 35, failed: 5, cancelled: 0, running: 10 });
    expect(formatSeconds(7300)).toBe('2 h 2 min');
    expect(capBindsConcurrency(batch())).toBe(false);
    expect(capBindsConcurrency(batch({ maxCostUsd: 0.5, rowMaxCostUsd: 0.5, spentUsd: 0, heldUsd: 0.5, rows: { ...batch().rows, running: 1 } }))).toBe(true);
    expect(canRetry(batch())).toBe(false);
    expect(canRetry(batch({ status: 'completed' }))).toBe(true);
    expect(canRetry(batch({ status: 'completed', rows: { ...batch().rows, failed: 0 } }))).toBe(false);
  });
});

describe('BatchPage', () => {
  beforeEach(() => Object.values(routes).forEach((fn) => fn.mockReset()));

  it('shows the progress, the counts, spend against the cap, the failed rows and the refused ones', async () => {
    routes['batches.get'].mockResolvedValue(batch());
    routes['batches.rows'].mockResolvedValue({ rows: [failedRow(3), failedRow(9)], nextCursor: null });
    at('/batches/11111111-2222-4333-8444-555555555555');
    expect((await screen.findByTestId('batch-progress-line')).textContent).toMatch('80 of 200 rows ended · 13 rows/s · about 2 min left');
    expect((screen.getByRole('progressbar', { name: 'Rows ended' })).getAttribute('aria-valuenow')).toBe('80');
    expect((screen.getByLabelText('Spend')).textContent).toMatch('Spent $4.25 of the $10.00 cap · $1.00 held by rows in flight');
    const failed = within(screen.getByLabelText('Failed rows'));
    expect(failed.getByText('row 3 image unreadable')).toBeTruthy();
    expect(failed.getAllByRole('link', { name: '00000000' }).map((link) => link.getAttribute('href'))).toEqual(['/runs/00000000-0000-4000-8000-000000000003', '/runs/00000000-0000-4000-8000-000000000009']);
    expect((screen.getByLabelText('Skipped rows')).textContent).toMatch('row 7 (image): expected a URL');
    expect(routes['batches.rows']).toHaveBeenCalledWith({ id: '11111111-2222-4333-8444-555555555555', status: 'failed', limit: 50 });
    expect(screen.queryByRole('button', { name: /Retry failed/ })).toBeNull();
  });

  it('cancels a running batch, and retries the failed rows of an ended one', async () => {
    routes['batches.get'].mockResolvedValueOnce(batch());
    routes['batches.rows'].mockResolvedValue({ rows: [], nextCursor: null });
    routes['batches.cancel'].mockResolvedValue(batch({ status: 'cancelling' }));
    at('/batches/11111111-2222-4333-8444-555555555555');
    routes['batches.get'].mockResolvedValue(batch({ status: 'cancelled', rows: { ...batch().rows, pending: 0, running: 0, cancelled: 120 }, finishedAt: '2026-12-07T01:02:00.000Z' }));
    fireEvent.click(await screen.findByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(routes['batches.cancel']).toHaveBeenCalledWith({ id: '11111111-2222-4333-8444-555555555555' }));
    const retry = await screen.findByRole('button', { name: 'Retry failed (130)' });
    expect((screen.getByTestId('batch-status')).textContent).toMatch('cancelled');
    routes['batches.retry'].mockRejectedValue(new Error('batch has no failed rows'));
    fireEvent.click(retry);
    expect((await screen.findByRole('alert')).textContent).toMatch('batch has no failed rows');
  });

  it('says what went wrong when the batch does not load', async () => {
    routes['batches.get'].mockRejectedValue(new Error('no batch "x" in your organization'));
    at('/batches/x');
    expect((await screen.findByRole('alert')).textContent).toMatch('Could not load the batch: no batch "x" in your organization');
  });
});

describe('BatchesPage', () => {
  beforeEach(() => Object.values(routes).forEach((fn) => fn.mockReset()));

  it('lists batches with rows ended, failures and spend, each linking to its page', async () => {
    routes['batches.list'].mockResolvedValue({ batches: [batch(), batch({ id: '99999999-2222-4333-8444-555555555555', workflowRef: null, status: 'completed' })], nextCursor: null });
    at('/batches');
    const link = await screen.findByRole('link', { name: /acme\/caption@1\.0\.0/ });
    expect((link).getAttribute('href')).toBe('/batches/11111111-2222-4333-8444-555555555555');
    const rows = screen.getAllByRole('row');
    expect((rows[1]).textContent).toMatch('80 / 200');
    expect((rows[1]).textContent).toMatch('$4.25 / $10.00');
    expect((rows[2]).textContent).toMatch('inline');
  });

  it('explains batches when there are none', async () => {
    routes['batches.list'].mockResolvedValue({ batches: [], nextCursor: null });
    at('/batches');
    expect(await screen.findByText('No batches yet.')).toBeTruthy();
  });
});
