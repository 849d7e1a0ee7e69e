import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { EditorWorkflow } from '../../../contract';

const routes = vi.hoisted(() => ({
  'editor.slugs.check': vi.fn(),
  'editor.workflows.versions': vi.fn(),
  'editor.workflows.publish': vi.fn(),
  'editor.workflows.version': vi.fn(),
  'editor.workflows.latest': vi.fn(),
  'editor.workflows.delete': vi.fn(),
}));
vi.mock('../lib/api', () => ({
  client: { routes },
  errorText: (err: unknown) => (err instanceof Error ? err.message : String(err)),
  sendJson: vi.fn(),
}));

// The real canvas needs the node catalog and a layout engine; the panel's wiring is what is tested here.
vi.mock('../editor/graph-view', () => ({
  GraphView: (props: { definition: { nodes: unknown[] }; changes?: Record<string, string> }) => (
    <div data-testid="graph">
      {props.definition.nodes.length} nodes{props.changes ? `, ${Object.keys(props.changes).length} marked` : ''}
    </div>
  ),
}));

const { PublishDialog } = await import('./publish-dialog');
const { HistoryPanel } = await import('./history-panel');

function workflow(over: Partial<EditorWorkflow> = {}): EditorWorkflow {
  return {
    id: '6f1c0d1e-0000-4000-8000-000000000001',
    name: 'Narrated Clip',
    address: null,
    latest: null,
    createdAt: '2026-11-20T10:00:00Z',
    updatedAt: '2026-11-24T10:00:00Z',
    lastPublishedAt: null,
    draftPending: true,
    draft: { version: 2, nodes: [{ id: 'in', uses: 'input', outputType: 'TEXT' }] },
    layout: null,
    problems: [],
    ...over,
  };
}

const published = { id: 'x', address: 'acme/narrated-clip', version: '1.0.0', sequence: 1, workflow: { version: 2 as const, nodes: [] } };
const history = [
  { version: '1.0.0', sequence: 3, latest: true, createdAt: '2026-11-24T10:00:00Z', publishedBy: { id: 'u', name: 'Dev' }, note: null },
  { version: '1.1.0', sequence: 2, latest: false, createdAt: '2026-11-23T10:00:00Z', publishedBy: { id: 'u', name: 'Dev' }, note: 'faster' },
  { version: '1.0.0-old', sequence: 1, latest: false, createdAt: '2026-11-22T10:00:00Z', publishedBy: null, note: null },
].filter((v) => v.version !== '1.0.0-old');

beforeEach(() => {
  for (const fn of Object.values(routes)) fn.mockReset();
});

describe('PublishDialog, first publish', () => {
  it('suggests the slug, checks it live and publishes with slug, version and note', async () => {
    routes['editor.slugs.check'].mockImplementation(async ({ slug }: { slug: string }) => ({ slug, address: `acme/${slug}`, available: true, message: 'available' }));
    routes['editor.workflows.publish'].mockResolvedValue(published);
    const onPublished = vi.fn();
    const user = userEvent.setup();
    render(<PublishDialog workflow={workflow()} onClose={() => {}} onPublished={onPublished} />);

    const slug = screen.getByLabelText('Slug');
    expect(slug).toHaveProperty('value', 'narrated-clip');
    expect(await screen.findByText(/acme\/narrated-clip is available/)).toBeTruthy();
    expect(routes['editor.slugs.check']).toHaveBeenCalledWith({ slug: 'narrated-clip' });
    expect(screen.getByText('acme/narrated-clip@1.0.0')).toBeTruthy();

    await user.type(screen.getByLabelText(/Changelog note/), 'First cut');
    await user.click(screen.getByRole('button', { name: 'Publish 1.0.0' }));
    expect(routes['editor.workflows.publish']).toHaveBeenCalledWith({ id: workflow().id, slug: 'narrated-clip', version: '1.0.0', note: 'First cut' });
    expect(onPublished).toHaveBeenCalledWith(published);
  });

  it('says a malformed slug is wrong without asking the server, and blocks publishing', async () => {
    const user = userEvent.setup();
    render(<PublishDialog workflow={workflow()} onClose={() => {}} onPublished={() => {}} />);
    const slug = screen.getByLabelText('Slug');
    await user.clear(slug);
    await user.type(slug, 'Bad Slug');
    expect(screen.getByText(/must be kebab-case/)).toBeTruthy();
    expect(routes['editor.slugs.check']).not.toHaveBeenCalled();
    expect(screen.getByRole('button', { name: /Publish/ })).toHaveProperty('disabled', true);
  });

  it("shows the server's reason a slug is taken and blocks publishing", async () => {
    routes['editor.slugs.check'].mockResolvedValue({ slug: 'narrated-clip', address: 'acme/narrated-clip', available: false, message: 'the slug "narrated-clip" is retired' });
    render(<PublishDialog workflow={workflow()} onClose={() => {}} onPublished={() => {}} />);
    expect(await screen.findByText('the slug "narrated-clip" is retired')).toBeTruthy();
    expect(screen.getByRole('button', { name: /Publish/ })).toHaveProperty('disabled', true);
  });

  it('lists the draft problems and keeps Publish disabled', () => {
    routes['editor.slugs.check'].mockReturnValue(new Promise(() => {}));
    const problems = [{ path: 'nodes[1].inputs.text', message: 'references unknown node "nope"' }];
    render(<PublishDialog workflow={workflow({ problems })} onClose={() => {}} onPublished={() => {}} />);
    const alert = screen.getByRole('alert');
    expect(within(alert).getByText(/can’t be published until this problem is fixed/)).toBeTruthy();
    expect(within(alert).getByText('nodes[1].inputs.text')).toBeTruthy();
    expect(screen.getByRole('button', { name: /Publish/ })).toHaveProperty('disabled', true);
  });

  it("shows a refused publish in the server's words with its issues", async () => {
    routes['editor.slugs.check'].mockImplementation(async ({ slug }: { slug: string }) => ({ slug, address: `acme/${slug}`, available: true, message: 'available' }));
    routes['editor.workflows.publish'].mockRejectedValue(
      Object.assign(new Error('the draft is invalid'), { issues: [{ path: 'draft.nodes[0].uses', message: 'unknown node "x"' }] }),
    );
    const user = userEvent.setup();
    render(<PublishDialog workflow={workflow()} onClose={() => {}} onPublished={() => {}} />);
    await screen.findByText(/is available/);
    await user.click(screen.getByRole('button', { name: 'Publish 1.0.0' }));
    expect(await screen.findByText('the draft is invalid')).toBeTruthy();
    expect(screen.getByText('draft.nodes[0].uses')).toBeTruthy();
  });

  it('closes on Escape', async () => {
    routes['editor.slugs.check'].mockReturnValue(new Promise(() => {}));
    const onClose = vi.fn();
    const user = userEvent.setup();
    render(<PublishDialog workflow={workflow()} onClose={onClose} onPublished={() => {}} />);
    await user.keyboard('{Escape}');
    expect(onClose).toHaveBeenCalled();
  });
});

describe('PublishDialog, later publishes', () => {
  const later = workflow({ address: 'acme/narrated-clip', latest: { version: '1.0.0', sequence: 3 } });

  it('offers each bump with the version it gives, continuing from the highest ever published', async () => {
    routes['editor.workflows.versions'].mockResolvedValue({ versions: history });
    routes['editor.workflows.publish'].mockResolvedValue({ ...published, version: '2.0.0' });
    const user = userEvent.setup();
    render(<PublishDialog workflow={later} onClose={() => {}} onPublished={() => {}} />);
    expect(await screen.findByText('1.2.0')).toBeTruthy();
    expect(screen.getByText('1.1.1')).toBeTruthy();
    expect(screen.getByText('2.0.0')).toBeTruthy();
    expect(screen.getByText('acme/narrated-clip@1.2.0')).toBeTruthy();
    expect(screen.queryByLabelText('Slug')).toBeNull();

    await user.click(screen.getByRole('radio', { name: /Major/ }));
    expect(screen.getByText('acme/narrated-clip@2.0.0')).toBeTruthy();
    await user.click(screen.getByRole('button', { name: 'Publish 2.0.0' }));
    expect(routes['editor.workflows.publish']).toHaveBeenCalledWith({ id: later.id, bump: 'major' });
  });
});

describe('HistoryPanel', () => {
  const later = workflow({ address: 'acme/narrated-clip', latest: { version: '1.1.0', sequence: 2 } });
  const versions = [
    { version: '2.0.0', sequence: 3, latest: false, createdAt: '2026-11-24T10:00:00Z', publishedBy: { id: 'u', name: 'Dev' }, note: 'breaking' },
    { version: '1.1.0', sequence: 2, latest: true, createdAt: '2026-11-23T10:00:00Z', publishedBy: { id: 'u', name: 'Dev' }, note: 'faster' },
    { version: '1.0.0', sequence: 1, latest: false, createdAt: '2026-11-22T10:00:00Z', publishedBy: null, note: null },
  ];

  it('lists the versions and confirms a rollback with what each ref will resolve to', async () => {
    routes['editor.workflows.versions'].mockResolvedValue({ versions });
    const moved = { ...later, latest: { version: '1.0.0', sequence: 1 } };
    routes['editor.workflows.latest'].mockResolvedValue(moved);
    const onChanged = vi.fn();
    const user = userEvent.setup();
    render(<HistoryPanel workflow={later} onChanged={onChanged} onDeleted={() => {}} onClose={() => {}} />);
    expect(await screen.findByText('faster')).toBeTruthy();
    expect(screen.getByText('deleted account')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Point latest at 1.1.0' })).toHaveProperty('disabled', true);

    await user.click(screen.getByRole('button', { name: 'Point latest at 1.0.0' }));
    const confirm = screen.getByRole('alertdialog');
    const rows = within(confirm).getAllByRole('row').map((r) => r.textContent);
    expect(rows).toContain('acme/narrated-clip@latestalso a bare acme/narrated-clip1.1.01.0.0');
    expect(rows).toContain('acme/narrated-clip@2not found (404)not found (404)');
    expect(rows).toContain('acme/narrated-clip@11.1.01.0.0');
    await user.click(within(confirm).getByRole('button', { name: 'Point @latest at 1.0.0' }));
    expect(routes['editor.workflows.latest']).toHaveBeenCalledWith({ id: later.id, version: '1.0.0' });
    expect(onChanged).toHaveBeenCalledWith(moved);
  });

  it('deletes only once the name is typed, and shows a refusal in the server words', async () => {
    routes['editor.workflows.versions'].mockResolvedValue({ versions });
    routes['editor.workflows.delete'].mockRejectedValue(new Error('only owners and admins can delete a workflow'));
    const user = userEvent.setup();
    render(<HistoryPanel workflow={later} onChanged={() => {}} onDeleted={() => {}} onClose={() => {}} />);
    await user.click(screen.getByRole('button', { name: 'Delete workflow…' }));
    const confirm = screen.getByRole('alertdialog');
    expect(within(confirm).getByText(/retired forever/)).toBeTruthy();
    const button = within(confirm).getByRole('button', { name: 'Delete forever' });
    expect(button).toHaveProperty('disabled', true);
    await user.type(within(confirm).getByLabelText(/to confirm/), 'Narrated Clip');
    expect(button).toHaveProperty('disabled', false);
    await user.click(button);
    expect(await within(confirm).findByText('only owners and admins can delete a workflow')).toBeTruthy();
  });

  it('diffs two versions', async () => {
    routes['editor.workflows.versions'].mockResolvedValue({ versions });
    routes['editor.workflows.version'].mockImplementation(async ({ version }: { version: string }) => ({
      ...versions.find((v) => v.version === version)!,
      layout: null,
      definition:
        version === '2.0.0'
          ? { version: 2, nodes: [{ id: 'in', uses: 'input', outputType: 'IMAGE' }, { id: 'b', uses: 'image-resize' }] }
          : { version: 2, nodes: [{ id: 'in', uses: 'input', outputType: 'TEXT' }, { id: 'a', uses: 'text-upper' }] },
    }));
    const user = userEvent.setup();
    render(<HistoryPanel workflow={later} onChanged={() => {}} onDeleted={() => {}} onClose={() => {}} />);
    await screen.findByText('faster');
    await act(async () => {});
    await user.selectOptions(screen.getByLabelText('From version'), '1.1.0');
    await user.selectOptions(screen.getByLabelText('To version'), '2.0.0');
    await user.click(screen.getByRole('button', { name: 'Show changes' }));
    const pane = await screen.findByRole('region', { name: 'Changes from 1.1.0 to 2.0.0' });
    await waitFor(() => expect(within(pane).getByText('image-resize')).toBeTruthy());
    expect(within(pane).getByText('text-upper')).toBeTruthy();
    expect(within(pane).getByText('outputType')).toBeTruthy();
    expect(within(pane).getByTestId('graph').textContent).toBe('3 nodes, 3 marked');
  });
});
