import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Schedule } from '../../../contract';
import type * as Api from '../lib/api';

const routes = {
  'schedules.get': vi.fn(),
  'schedules.list': vi.fn(),
  'schedules.create': vi.fn(),
  'schedules.pause': vi.fn(),
  'schedules.resume': vi.fn(),
  'schedules.delete': vi.fn(),
};
vi.mock('../lib/api', async (importOriginal) => {
  const actual = await importOriginal<typeof Api>();
  return { ...actual, client: { routes } };
});

const { SchedulePage } = await import('./schedule-page');
const { SchedulesPage } = await import('./schedules-page');
const { scheduleRequest } = await import('./schedule-form');

const ID = '33333333-2222-4333-8444-555555555555';

function schedule(over: Partial<Schedule> = {}): Schedule {
  return {
    id: ID,
    name: 'nightly catalog',
    status: 'active',
    workflowRef: 'acme/catalog@latest',
    inputs: { shop: { value: 'eu' } },
    cron: '0 9 * * 1-5',
    timezone: 'Europe/Paris',
    maxCostUsd: 0.5,
    monthlyBudgetUsd: 20,
    spentThisMonthUsd: 1.25,
    catchUpSeconds: 3600,
    maxDurationSeconds: null,
    outputCache: null,
    pauseReason: null,
    nextTicks: ['2026-12-07T08:00:00.000Z', '2026-12-08T08:00:00.000Z'],
    recentTicks: [
      { tickAt: '2026-12-04T08:00:00.000Z', status: 'started', runId: '00000000-0000-4000-8000-000000000001', runStatus: 'completed', costUsd: 0.25, skippedThrough: null, skippedCount: 0, error: null, recordedAt: '2026-12-04T08:00:00.100Z' },
      { tickAt: '2026-12-01T08:00:00.000Z', status: 'skipped', runId: null, runStatus: null, costUsd: null, skippedThrough: '2026-12-03T08:00:00.000Z', skippedCount: 3, error: { code: 'missed', message: '3 ticks passed while no worker ran' }, recordedAt: '2026-12-04T08:00:00.050Z' },
    ],
    webhook: null,
    createdAt: '2026-11-30T10:00:00.000Z',
    updatedAt: '2026-11-30T10:00:00.000Z',
    ...over,
  };
}

function at(path: string) {
  const router = createMemoryRouter(
    [
      { path: '/schedules', element: <SchedulesPage /> },
      { path: '/schedules/:id', element: <SchedulePage /> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

describe('scheduleRequest', () => {
  const draft = { workflowRef: 'acme/flow@1', cron: '0 9 * * *', timezone: 'Europe/Paris', name: '', inputs: '', maxCostUsd: '', monthlyBudgetUsd: '' };
  it('makes the request of a filled form, plain input values as artifacts', () => {
    expect(scheduleRequest({ ...draft, inputs: '{"n": 3, "img": {"ref": "https://x/y.png"}}', maxCostUsd: '0.25' })).toEqual({
      ok: true,
      request: { workflowRef: 'acme/flow@1', cron: '0 9 * * *', timezone: 'Europe/Paris', inputs: { n: { value: 3 }, img: { ref: 'https://x/y.png' } }, maxCostUsd: 0.25 },
    });
  });
  it('says which field to fix', () => {
    expect(scheduleRequest({ ...draft, workflowRef: ' ' })).toMatchObject({ ok: false, field: 'workflowRef' });
    expect(scheduleRequest({ ...draft, inputs: '[1]' })).toMatchObject({ ok: false, field: 'inputs' });
    expect(scheduleRequest({ ...draft, monthlyBudgetUsd: '-2' })).toMatchObject({ ok: false, field: 'monthlyBudgetUsd' });
  });
});

describe('SchedulePage', () => {
  beforeEach(() => Object.values(routes).forEach((fn) => fn.mockReset()));

  it('shows what runs when, in its time zone, its money and its latest ticks with their runs', async () => {
    routes['schedules.get'].mockResolvedValue(schedule());
    at(`/schedules/${ID}`);
    expect(await screen.findByRole('heading', { name: 'nightly catalog' })).toBeTruthy();
    expect(screen.getByText('Mon 7 Dec, 09:00 · Tue 8 Dec, 09:00')).toBeTruthy();
    expect(screen.getByText(/up to \$0\.50 a run, \$20\.00 a month; spent this month/)).toBeTruthy();
    expect((screen.getByRole('link', { name: '00000000' })).getAttribute('href')).toBe('/runs/00000000-0000-4000-8000-000000000001');
    expect(screen.getByText('skipped ×3')).toBeTruthy();
    expect(screen.getByText('3 ticks passed while no worker ran')).toBeTruthy();
  });

  it('says why a schedule paused itself, and resumes it', async () => {
    routes['schedules.get'].mockResolvedValue(
      schedule({ status: 'paused', nextTicks: [], pauseReason: { code: 'insufficient_credit', message: 'your balance is $0.00; resume the schedule once credit is added', by: 'service', at: '2026-12-06T08:00:00.000Z' } }),
    );
    routes['schedules.resume'].mockResolvedValue(schedule());
    at(`/schedules/${ID}`);
    expect((await screen.findByTestId('pause-reason')).textContent).toMatch(/Paused itself .*: your balance is \$0\.00; resume the schedule once credit is added/);
    expect(screen.getByText('none while paused')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Resume' }));
    await waitFor(() => expect((screen.getByTestId('schedule-status')).textContent).toMatch('active'));
    expect(routes['schedules.resume']).toHaveBeenCalledWith({ id: ID });
  });

  it('deletes only after a second click, then goes back to the list', async () => {
    routes['schedules.get'].mockResolvedValue(schedule());
    routes['schedules.delete'].mockResolvedValue(null);
    routes['schedules.list'].mockResolvedValue({ schedules: [], nextCursor: null });
    const router = at(`/schedules/${ID}`);
    fireEvent.click(await screen.findByRole('button', { name: 'Delete' }));
    expect(routes['schedules.delete']).not.toHaveBeenCalled();
    fireEvent.click(screen.getByRole('button', { name: 'Delete for good' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/schedules'));
  });
});

describe('SchedulesPage', () => {
  beforeEach(() => Object.values(routes).forEach((fn) => fn.mockReset()));

  it('lists schedules with a paused one saying why, and creates one from the form', async () => {
    routes['schedules.list'].mockResolvedValue({ schedules: [schedule(), schedule({ id: '44444444-2222-4333-8444-555555555555', name: null, status: 'paused', nextTicks: [], pauseReason: { code: 'workflow_not_found', message: 'gone', by: 'service', at: '2026-12-06T08:00:00.000Z' } })], nextCursor: null });
    const router = at('/schedules');
    expect(await screen.findByRole('link', { name: 'nightly catalog' })).toBeTruthy();
    expect(screen.getByText('paused: workflow_not_found')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'New schedule' }));
    fireEvent.change(screen.getByRole('textbox', { name: /Workflow/ }), { target: { value: 'acme/catalog@1' } });
    fireEvent.change(screen.getByRole('textbox', { name: /Inputs/ }), { target: { value: '{"shop": "eu"}' } });
    routes['schedules.create'].mockRejectedValueOnce(new Error('cron "0 9 * *" has 4 fields; write five'));
    fireEvent.change(screen.getByRole('textbox', { name: /Cron/ }), { target: { value: '0 9 * *' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create schedule' }));
    expect((await screen.findByRole('alert')).textContent).toMatch('has 4 fields; write five');
    routes['schedules.create'].mockResolvedValueOnce(schedule({ id: '55555555-2222-4333-8444-555555555555' }));
    routes['schedules.get'].mockResolvedValue(schedule());
    fireEvent.change(screen.getByRole('textbox', { name: /Cron/ }), { target: { value: '0 9 * * *' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create schedule' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/schedules/55555555-2222-4333-8444-555555555555'));
    expect(routes['schedules.create']).toHaveBeenLastCalledWith(expect.objectContaining({ workflowRef: 'acme/catalog@1', cron: '0 9 * * *', inputs: { shop: { value: 'eu' } } }));
  });
});
