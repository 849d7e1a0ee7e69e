import { render, screen } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { useSession, type Session } from '../lib/session';
import { ConsentPage, type ConsentRequest } from './consent-page';

const api = vi.hoisted(() => ({ sendJson: vi.fn() }));
vi.mock('../lib/api', () => ({
  client: { transport: {} },
  errorText: (err: unknown) => (err instanceof Error ? err.message : String(err)),
  sendJson: api.sendJson,
}));

const SESSION: Session = {
  user: { id: 'u', email: 'dev@example.test', name: 'Dev' },
  organization: { id: 'o1', slug: 'acme', name: 'Acme', role: 'owner', balanceUsd: 5 },
  organizations: [{ id: 'o1', slug: 'acme', name: 'Acme', role: 'owner' }],
  expiresAt: '2030-01-01T00:00:00Z',
};
const REQUEST: ConsentRequest = {
  client: { id: '3f1c2a9e-0000-4000-8000-000000000001', name: 'Claude Desktop' },
  redirectUri: 'http://127.0.0.1:9/callback',
  redirectHost: '127.0.0.1:9',
  scopes: ['read', 'run'],
  fields: { response_type: 'code', client_id: '3f1c2a9e-0000-4000-8000-000000000001', redirect_uri: 'http://127.0.0.1:9/callback', state: 'xyz' },
  accessMinutes: 60,
  refreshDays: 30,
};
const SEARCH = '?response_type=code&client_id=3f1c&state=xyz';

function show() {
  const router = createMemoryRouter(
    [
      { path: '/oauth/mcp/authorize', element: <ConsentPage /> },
      { path: '/sign-in', element: <p>sign-in page</p> },
    ],
    { initialEntries: [`/oauth/mcp/authorize${SEARCH}`] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

beforeEach(() => {
  api.sendJson.mockReset();
  useSession.setState({ state: { status: 'signed-in', session: SESSION } });
});

describe('ConsentPage', () => {
  it('asks the server about the request and shows a real form posting the decision back with the request', async () => {
    api.sendJson.mockResolvedValue(REQUEST);
    show();
    expect(await screen.findByRole('heading', { name: 'Allow Claude Desktop?' })).toBeTruthy();
    expect(api.sendJson).toHaveBeenCalledWith({}, 'GET', `/oauth/mcp/authorize/request${SEARCH}`);
    const form = document.querySelector('form')!;
    expect(form.getAttribute('method')).toBe('post');
    expect(form.getAttribute('action')).toBe('/oauth/mcp/authorize');
    const fields = Object.fromEntries(new FormData(form));
    expect(fields).toEqual({ ...REQUEST.fields, org: 'acme' });
    expect(screen.getByText('127.0.0.1:9')).toBeTruthy();
    expect(screen.getByRole('note').textContent).toContain("spend the organization's credit");
    const allow = screen.getByRole('button', { name: 'Allow' }) as HTMLButtonElement;
    expect([allow.type, allow.name, allow.value]).toEqual(['submit', 'action', 'approve']);
    expect((screen.getByRole('button', { name: 'Deny' }) as HTMLButtonElement).value).toBe('deny');
  });

  it("shows a request the server refuses in its words, to anyone, with nothing to submit", async () => {
    useSession.setState({ state: { status: 'signed-out', session: null } });
    api.sendJson.mockRejectedValue(new Error('the redirect_uri "http://127.0.0.1:10/callback" is not one the application registered'));
    show();
    expect(await screen.findByRole('heading', { name: 'This authorization request cannot be used' })).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toContain('is not one the application registered');
    expect(document.querySelector('form')).toBeNull();
  });

  it('sends a signed-out person to sign in and back to this request', async () => {
    useSession.setState({ state: { status: 'signed-out', session: null } });
    api.sendJson.mockResolvedValue(REQUEST);
    const router = show();
    expect(await screen.findByText('sign-in page')).toBeTruthy();
    expect(router.state.location.search).toBe(`?next=${encodeURIComponent(`/oauth/mcp/authorize${SEARCH}`)}`);
  });
});
