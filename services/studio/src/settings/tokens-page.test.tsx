import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const routes = vi.hoisted(() => ({
  'tokens.list': vi.fn(),
  'tokens.create': vi.fn(),
  'tokens.revoke': vi.fn(),
  'me.get': vi.fn(),
}));
vi.mock('../lib/api', () => ({
  client: { routes },
  errorText: (err: unknown) => (err instanceof Error ? err.message : String(err)),
}));

const { TokensPage, CreateTokenDialog, TokenCreatedDialog } = await import('./tokens-page');

const summary = (over: Record<string, unknown>) => ({
  id: 'id',
  kind: 'personal',
  name: 'n',
  prefix: 'svc_abc',
  scopes: ['read'],
  createdAt: '2026-11-20T10:00:00Z',
  lastUsedAt: null,
  expiresAt: null,
  ...over,
});

beforeEach(() => {
  for (const fn of Object.values(routes)) fn.mockReset();
});

describe('TokensPage', () => {
  it('lists tokens, marks this session and does not offer to revoke it', async () => {
    routes['tokens.list'].mockResolvedValue({
      tokens: [
        summary({ id: 't1', name: 'CI deploys', scopes: ['read', 'run'], lastUsedAt: null }),
        summary({ id: 'b1', kind: 'browser', name: 'web editor sign-in', prefix: 'svcb_xyz' }),
        summary({ id: 'b2', kind: 'browser', name: 'other browser', prefix: 'svcb_other' }),
      ],
    });
    routes['me.get'].mockResolvedValue({ token: { id: 'b1' } });
    render(<TokensPage />);
    const personal = await screen.findByRole('region', { name: 'Personal access tokens' });
    const row = within(personal).getByText('CI deploys').closest('tr')!;
    expect(within(row).getAllByText('never')).toHaveLength(2); // last used, expires
    expect(within(row).getByRole('button', { name: 'Revoke CI deploys' })).toBeTruthy();
    const sessions = screen.getByRole('region', { name: 'Sessions and connected apps' });
    const mine = (await within(sessions).findByText('this session')).closest('tr')!;
    expect(within(mine).queryByRole('button')).toBeNull();
    expect(within(sessions).getByRole('button', { name: 'Revoke other browser' })).toBeTruthy();
  });

  it('revokes after confirmation and drops the row', async () => {
    routes['tokens.list'].mockResolvedValueOnce({ tokens: [summary({ id: 't1', name: 'CI deploys' })] }).mockResolvedValue({ tokens: [] });
    routes['me.get'].mockResolvedValue({ token: { id: 'other' } });
    routes['tokens.revoke'].mockResolvedValue(null);
    const user = userEvent.setup();
    render(<TokensPage />);
    await user.click(await screen.findByRole('button', { name: 'Revoke CI deploys' }));
    const confirm = screen.getByRole('alertdialog');
    expect(within(confirm).getByText(/refused from its next request/)).toBeTruthy();
    await user.click(within(confirm).getByRole('button', { name: 'Revoke' }));
    expect(routes['tokens.revoke']).toHaveBeenCalledWith({ id: 't1' });
    expect(await screen.findByText(/No tokens yet/)).toBeTruthy();
  });

  it("shows a failed list in the server's words", async () => {
    routes['tokens.list'].mockRejectedValue(new Error('rate limited: retry in 3 s'));
    routes['me.get'].mockResolvedValue({ token: { id: 'x' } });
    render(<TokensPage />);
    expect(await screen.findByText(/rate limited: retry in 3 s/)).toBeTruthy();
  });
});

describe('CreateTokenDialog', () => {
  const now = () => new Date(2026, 10, 25, 12, 0);

  it('sends name, scopes and the preset days', async () => {
    const created = { ...summary({ id: 'n', name: 'CI' }), token: 'svc_secret' };
    routes['tokens.create'].mockResolvedValue(created);
    const onCreated = vi.fn();
    const user = userEvent.setup();
    render(<CreateTokenDialog onClose={() => {}} onCreated={onCreated} now={now} />);
    await user.type(screen.getByLabelText('Name'), '  CI  ');
    await user.click(screen.getByRole('checkbox', { name: /^run/ }));
    await user.selectOptions(screen.getByLabelText('Expires'), '30');
    expect(screen.getByText(/Expires on December 25, 2026/)).toBeTruthy();
    await user.click(screen.getByRole('button', { name: 'Create token' }));
    expect(routes['tokens.create']).toHaveBeenCalledWith({ name: 'CI', scopes: ['read', 'run'], expiresInDays: 30 });
    expect(onCreated).toHaveBeenCalledWith(created);
  });

  it('omits expiresInDays for no expiry, and refuses a custom date past 365 days', async () => {
    routes['tokens.create'].mockResolvedValue({ ...summary({}), token: 't' });
    const user = userEvent.setup();
    render(<CreateTokenDialog onClose={() => {}} onCreated={() => {}} now={now} />);
    await user.type(screen.getByLabelText('Name'), 'x');
    await user.selectOptions(screen.getByLabelText('Expires'), 'custom');
    const date = screen.getByLabelText('Expiry date');
    expect(date.getAttribute('max')).toBe('2027-11-25');
    await user.type(date, '2028-01-01');
    expect(screen.getByText(/at most 365 days/)).toBeTruthy();
    await user.click(screen.getByRole('button', { name: 'Create token' }));
    expect(routes['tokens.create']).not.toHaveBeenCalled();
    await user.selectOptions(screen.getByLabelText('Expires'), 'none');
    await user.click(screen.getByRole('button', { name: 'Create token' }));
    expect(routes['tokens.create']).toHaveBeenCalledWith({ name: 'x', scopes: ['read'] });
  });

  it('needs a name and a scope', async () => {
    const user = userEvent.setup();
    render(<CreateTokenDialog onClose={() => {}} onCreated={() => {}} now={now} />);
    await user.click(screen.getByRole('checkbox', { name: /^read/ }));
    await user.click(screen.getByRole('button', { name: 'Create token' }));
    expect(screen.getByText(/Give the token a name/)).toBeTruthy();
    expect(screen.getByText('Choose at least one scope.')).toBeTruthy();
    expect(routes['tokens.create']).not.toHaveBeenCalled();
  });
});

describe('TokenCreatedDialog', () => {
  const token = { ...summary({ name: 'CI', scopes: ['read'] }), token: 'svc_full_secret_value' } as never;

  it('copies the value with the clipboard', async () => {
    const user = userEvent.setup();
    const writeText = vi.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    render(<TokenCreatedDialog token={token} onClose={() => {}} />);
    expect(screen.getByText(/only time the full token is shown/)).toBeTruthy();
    await user.click(screen.getByRole('button', { name: 'Copy' }));
    expect(writeText).toHaveBeenCalledWith('svc_full_secret_value');
    expect(screen.getByRole('button', { name: 'Copied ✓' })).toBeTruthy();
  });

  it('selects the value when the clipboard is refused, and Esc does not close it', async () => {
    const user = userEvent.setup();
    Object.defineProperty(navigator, 'clipboard', { value: { writeText: vi.fn().mockRejectedValue(new Error('denied')) }, configurable: true });
    const onClose = vi.fn();
    render(<TokenCreatedDialog token={token} onClose={onClose} />);
    await user.click(screen.getByRole('button', { name: 'Copy' }));
    const field = screen.getByLabelText('Token') as HTMLTextAreaElement;
    expect(document.activeElement).toBe(field);
    expect(field.value.slice(field.selectionStart, field.selectionEnd)).toBe('svc_full_secret_value');
    expect(screen.getByText(/press Ctrl\+C/)).toBeTruthy();
    await user.keyboard('{Escape}');
    expect(onClose).not.toHaveBeenCalled();
  });
});
