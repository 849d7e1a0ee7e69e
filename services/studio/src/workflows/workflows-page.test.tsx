import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const routes = vi.hoisted(() => ({ 'editor.workflows.list': vi.fn(), 'editor.workflows.create': vi.fn() }));
const ops = vi.hoisted(() => ({ 'nodes.list': vi.fn() }));
vi.mock('../lib/api', () => ({
  client: { routes, ops },
  errorText: (err: unknown) => (err instanceof Error ? err.message : String(err)),
}));

const { WorkflowsPage } = await import('./workflows-page');

const wf = (over: Record<string, unknown>) => ({
  id: 'id',
  name: 'n',
  address: null,
  latest: null,
  createdAt: '2026-11-20T10:00:00Z',
  updatedAt: '2026-11-24T10:00:00Z',
  lastPublishedAt: null,
  draftPending: false,
  ...over,
});

function renderAt(url: string) {
  const router = createMemoryRouter(
    [
      { path: '/', element: <WorkflowsPage /> },
      { path: '/workflows/:id', element: <p>editor</p> },
    ],
    { initialEntries: [url] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

/** A catalog of these node ids (the starters look at ids only). */
const specs = (...ids: string[]) => ids.map((id) => ({ id, kind: 'model', title: id, category: 'x', description: '', inputs: {}, outputs: {} }));

beforeEach(() => {
  routes['editor.workflows.list'].mockReset();
  routes['editor.workflows.create'].mockReset();
  // The catalog is fetched once per page load (editor/catalog.ts): one answer for the whole file.
  ops['nodes.list'].mockResolvedValue(specs('ocr-paddle', 'image-upscale', 'speech-espeak'));
});

describe('WorkflowsPage', () => {
  it('shows each workflow with its address, version and draft marker, filtered by ?q=', async () => {
    routes['editor.workflows.list'].mockResolvedValue({
      workflows: [
        wf({ id: 'a', name: 'Narrated clip', address: 'acme/narrated-clip', latest: { version: '1.2.0', sequence: 3 }, lastPublishedAt: '2026-11-24T09:00:00Z', draftPending: true }),
        wf({ id: 'b', name: 'Thumbnail maker' }),
      ],
    });
    const router = renderAt('/?q=clip');
    expect(await screen.findByText('Narrated clip')).toBeTruthy();
    expect(screen.queryByText('Thumbnail maker')).toBeNull();
    expect(screen.getByText('acme/narrated-clip')).toBeTruthy();
    expect(screen.getByText('1.2.0')).toBeTruthy();
    expect(screen.getByText('draft changes')).toBeTruthy();
    expect(screen.getByText('1 of 2 workflows')).toBeTruthy();

    const user = userEvent.setup();
    await user.clear(screen.getByLabelText('Search workflows'));
    expect(screen.getByText('Thumbnail maker')).toBeTruthy();
    expect(screen.getByText('unpublished')).toBeTruthy();
    expect(router.state.location.search).toBe('');
    await user.type(screen.getByLabelText('Search workflows'), 'thumb');
    expect(router.state.location.search).toBe('?q=thumb');
  });

  it('opens a workflow from its link with the keyboard', async () => {
    routes['editor.workflows.list'].mockResolvedValue({ workflows: [wf({ id: 'a1', name: 'Flow' })] });
    const router = renderAt('/');
    const link = await screen.findByRole('link', { name: 'Flow' });
    link.focus();
    const user = userEvent.setup();
    await user.keyboard('{Enter}');
    expect(router.state.location.pathname).toBe('/workflows/a1');
  });

  it('invites creating the first workflow, and creates it with an empty draft', async () => {
    routes['editor.workflows.list'].mockResolvedValue({ workflows: [] });
    routes['editor.workflows.create'].mockResolvedValue({ id: 'new-id' });
    const router = renderAt('/');
    const user = userEvent.setup();
    await user.click(await screen.findByRole('button', { name: 'Create a blank workflow' }));
    await user.type(screen.getByLabelText('Name'), ' My flow ');
    await user.click(screen.getByRole('button', { name: 'Create and open' }));
    expect(routes['editor.workflows.create']).toHaveBeenCalledWith({ name: 'My flow', definition: { version: 2, nodes: [] } });
    expect(router.state.location.pathname).toBe('/workflows/new-id');
  });

  it('offers the AI starters whose nodes this server offers, and creates one with its draft', async () => {
    routes['editor.workflows.list'].mockResolvedValue({ workflows: [] });
    routes['editor.workflows.create'].mockResolvedValue({ id: 'starter-id' });
    const router = renderAt('/');
    const user = userEvent.setup();
    const read = await screen.findByRole('button', { name: /Read the text in a photo/ });
    expect(screen.getByRole('button', { name: /Upscale a photo/ })).toBeTruthy();
    // Its detector (audio-detect-speech) is not in this catalog: that starter is not offered.
    expect(screen.queryByRole('button', { name: /find the speech/ })).toBeNull();
    await user.click(read);
    const [request] = routes['editor.workflows.create'].mock.calls[0] as [{ name: string; definition: { nodes: { uses: string }[] } }];
    expect(request.name).toBe('Read the text in a photo');
    expect(request.definition.nodes.map((n) => n.uses)).toEqual(['input', 'ocr-paddle', 'output', 'output']);
    expect(router.state.location.pathname).toBe('/workflows/starter-id');
  });

  it("shows a failed list in the server's words with a retry", async () => {
    routes['editor.workflows.list'].mockRejectedValueOnce(new Error('the service is unavailable')).mockResolvedValue({ workflows: [wf({ name: 'Back' })] });
    renderAt('/');
    expect(await screen.findByText(/the service is unavailable/)).toBeTruthy();
    await userEvent.setup().click(screen.getByRole('button', { name: 'Try again' }));
    expect(await screen.findByText('Back')).toBeTruthy();
  });
});
