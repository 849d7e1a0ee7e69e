import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { useSession, type Session } from '../lib/session';
import { DevicePage } from './device-page';

const calls = vi.hoisted(() => ({ lookup: vi.fn(), approve: vi.fn(), deny: vi.fn() }));
vi.mock('../lib/api', () => ({
  client: { routes: { 'device.lookup': calls.lookup, 'device.approve': calls.approve, 'device.deny': calls.deny } },
  errorText: (err: unknown) => (err instanceof Error ? err.message : String(err)),
  sendJson: vi.fn(),
}));

class Refused extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const SESSION: Session = {
  user: { id: 'u', email: 'dev@example.test', name: 'Dev' },
  organization: { id: 'o1', slug: 'acme', name: 'Acme', role: 'owner', balanceUsd: 5 },
  organizations: [
    { id: 'o1', slug: 'acme', name: 'Acme', role: 'owner' },
    { id: 'o2', slug: 'beta', name: 'Beta', role: 'member' },
  ],
  expiresAt: '2030-01-01T00:00:00Z',
};
const REQUEST = { user_code: 'BCDF-GHJK', client_id: 'svc-cli', scopes: ['read', 'run'], expires_at: new Date(Date.now() + 600_000).toISOString() };

function show(url: string) {
  const router = createMemoryRouter([{ path: '/device', element: <DevicePage /> }], { initialEntries: [url] });
  render(<RouterProvider router={router} />);
  return router;
}

beforeEach(() => {
  calls.lookup.mockReset();
  calls.approve.mockReset();
  calls.deny.mockReset();
  useSession.setState({ state: { status: 'signed-in', session: SESSION } });
});

describe('DevicePage', () => {
  it('looks the code up, warns about spending, and approves for the chosen organization', async () => {
    calls.lookup.mockResolvedValue(REQUEST);
    calls.approve.mockResolvedValue({ status: 'approved', ...REQUEST, organization: { id: 'o2', slug: 'beta', name: 'Beta' } });
    show('/device?user_code=bcdfghjk');
    expect(await screen.findByRole('heading', { name: 'Approve this login?' })).toBeTruthy();
    expect(calls.lookup).toHaveBeenCalledWith({ user_code: 'bcdfghjk' });
    expect(screen.getByLabelText('Code BCDF-GHJK')).toBeTruthy();
    expect(screen.getByRole('note').textContent).toContain("spend the organization's credit");
    fireEvent.change(screen.getByLabelText('Organization'), { target: { value: 'beta' } });
    fireEvent.click(screen.getByRole('button', { name: 'Approve' }));
    expect(await screen.findByRole('heading', { name: 'Device approved' })).toBeTruthy();
    expect(calls.approve).toHaveBeenCalledWith({ user_code: 'BCDF-GHJK', org: 'beta' });
    expect(screen.getByRole('status').textContent).toContain('You can return to your terminal');
  });

  it('denies', async () => {
    calls.lookup.mockResolvedValue({ ...REQUEST, scopes: ['read'] });
    calls.deny.mockResolvedValue({ status: 'denied', ...REQUEST });
    show('/device?user_code=BCDF-GHJK');
    await screen.findByRole('heading', { name: 'Approve this login?' });
    expect(screen.queryByRole('note')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Deny' }));
    expect(await screen.findByRole('heading', { name: 'Login denied' })).toBeTruthy();
    expect(calls.deny).toHaveBeenCalledWith({ user_code: 'BCDF-GHJK' });
  });

  it("shows an expired code's refusal in the server's words, with the code field to try another", async () => {
    calls.lookup.mockRejectedValue(new Refused('the code BCDF-GHJK has expired; run the command again for a new one', 410));
    show('/device?user_code=BCDF-GHJK');
    expect(await screen.findByRole('heading', { name: 'This code has expired' })).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toContain('has expired; run the command again');
    expect((screen.getByRole('textbox', { name: 'Code' }) as HTMLInputElement).value).toBe('BCDF-GHJK');
  });

  it('asks for the code when the address has none, and looks up what is typed', async () => {
    calls.lookup.mockRejectedValue(new Refused('no login request has the code ZZZZ-ZZZZ', 404));
    const router = show('/device');
    expect(screen.getByRole('heading', { name: 'Enter the code from your terminal' })).toBeTruthy();
    expect(calls.lookup).not.toHaveBeenCalled();
    fireEvent.change(screen.getByRole('textbox', { name: 'Code' }), { target: { value: 'zzzz zzzz' } });
    fireEvent.click(screen.getByRole('button', { name: 'Continue' }));
    await waitFor(() => expect(router.state.location.search).toBe('?user_code=ZZZZ-ZZZZ'));
    expect(await screen.findByRole('heading', { name: 'Code not found' })).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toBe('no login request has the code ZZZZ-ZZZZ');
  });

  it('keeps the request on screen when approval is refused for the organization', async () => {
    calls.lookup.mockResolvedValue(REQUEST);
    calls.approve.mockRejectedValue(new Refused('you are not a member of an organization "beta"', 404));
    show('/device?user_code=BCDF-GHJK');
    await screen.findByRole('heading', { name: 'Approve this login?' });
    fireEvent.click(screen.getByRole('button', { name: 'Approve' }));
    expect(await screen.findByRole('alert')).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toContain('you are not a member');
    expect(screen.getByRole('heading', { name: 'Approve this login?' })).toBeTruthy();
  });
});
