import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import './flow-test-setup';
import type { EditorWorkflow, Workflow } from '../../../contract';

const spec = {
  id: 'speech-espeak', kind: 'model', title: 'Text to speech', category: 'audio', description: 'Speaks text',
  inputs: {
    text: { name: 'text', connector: { id: 'TEXT', isOptional: false, isArray: false } },
    speed: { name: 'speed', connector: { id: 'INT', isOptional: true, isArray: false, minValue: 80, maxValue: 450, defaultValue: 175 } },
  },
  outputs: { audio: { name: 'audio', connector: { id: 'AUDIO', isOptional: false, isArray: false } } },
};

const draft: Workflow = { version: 2, nodes: [{ id: 'tts', uses: 'speech-espeak', inputs: { speed: 100 } }] };
const base: EditorWorkflow = {
  id: 'w1', name: 'My flow', address: null, latest: null, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z',
  lastPublishedAt: null, draftPending: true, draft, layout: { nodes: { tts: { x: 0, y: 0 } } },
  problems: [{ path: 'nodes[0].inputs.text', message: 'nodes[0] "tts": input "text" (TEXT) is required' }],
};

const api = vi.hoisted(() => ({
  get: vi.fn(),
  update: vi.fn(),
}));

vi.mock('../lib/api', () => ({
  client: {
    ops: { 'nodes.list': vi.fn(async () => [spec]), 'workflows.get': vi.fn(async () => { throw new Error('none'); }) },
    routes: {
      'editor.workflows.get': api.get,
      'editor.workflows.update': api.update,
      'editor.workflows.list': vi.fn(async () => ({ workflows: [] })),
      'editor.workflows.assets': vi.fn(),
    },
  },
  errorText: (e: unknown) => (e instanceof Error ? e.message : String(e)),
}));
// The dotted background and the minimap measure the canvas, which jsdom does not lay out.
vi.mock('@xyflow/react', async (original) => ({ ...(await original<Record<string, unknown>>()), Background: () => null, MiniMap: () => null }));
vi.mock('../runs/run-panel', () => ({ RunPanel: () => <aside>run panel</aside> }));
vi.mock('../publish/publish-dialog', () => ({ PublishDialog: () => <div role="dialog">publish</div> }));
vi.mock('../publish/history-panel', () => ({ HistoryPanel: () => <div role="dialog">history</div> }));

const { EditorPage } = await import('./editor-page');

function open() {
  const router = createMemoryRouter([{ path: '/workflows/:id', element: <EditorPage /> }, { path: '/', element: <p>home</p> }], { initialEntries: ['/workflows/w1'] });
  return render(<RouterProvider router={router} />);
}

beforeEach(() => {
  localStorage.clear();
  api.get.mockReset().mockResolvedValue(base);
  api.update.mockReset().mockImplementation(async (input: { definition?: Workflow; layout?: unknown; name?: string }) => ({
    ...base,
    ...(input.name ? { name: input.name } : {}),
    draft: input.definition ?? base.draft,
    layout: input.layout ?? base.layout,
    problems: [],
  }));
});

describe('EditorPage', () => {
  it('opens the draft with the server’s problems on the node and in the list', async () => {
    open();
    const node = await screen.findByTestId('node-tts');
    await waitFor(() => expect(node.textContent).toContain('Text to speech'));
    expect(node.className).toContain('invalid');
    const problems = screen.getByRole('region', { name: /Problems/ });
    expect(within(problems).getByText('nodes[0] "tts": input "text" (TEXT) is required')).toBeTruthy();
    expect((screen.getByRole('button', { name: 'Publish…' }) as HTMLButtonElement).disabled).toBe(true);
    // clicking the problem selects the node: the inspector shows the field with the message
    fireEvent.click(within(problems).getByRole('button'));
    const field = await screen.findByTestId('field-text');
    expect(within(field).getByText('nodes[0] "tts": input "text" (TEXT) is required')).toBeTruthy();
    expect((within(screen.getByTestId('field-speed')).getByRole('spinbutton') as HTMLInputElement).value).toBe('100');
  });

  it('adds a node by keyboard, keeps it locally, saves it after a pause, and shows the answer', async () => {
    open();
    const item = await screen.findByTestId('palette-output');
    expect(screen.getByTestId('save-state').textContent).toBe('Saved');
    await act(async () => {
      fireEvent.keyDown(item, { key: 'Enter' });
    });
    expect(await screen.findByTestId('node-output')).toBeTruthy();
    expect(screen.getByTestId('save-state').textContent).toBe('Unsaved changes');
    const local = JSON.parse(localStorage.getItem('studio.editor.draft.w1')!) as { definition: Workflow };
    expect(local.definition.nodes.map((n) => n.id)).toEqual(['tts', 'output']);
    await waitFor(() => expect(api.update).toHaveBeenCalledTimes(1), { timeout: 3000 });
    const sent = api.update.mock.calls[0]![0] as { id: string; definition: Workflow; layout: { nodes: Record<string, unknown> } };
    expect(sent.id).toBe('w1');
    expect(sent.definition.nodes).toEqual([{ id: 'tts', uses: 'speech-espeak', inputs: { speed: 100 } }, { id: 'output', uses: 'output' }]);
    expect(Object.keys(sent.layout.nodes).sort()).toEqual(['output', 'tts']);
    await waitFor(() => expect(screen.getByTestId('save-state').textContent).toBe('Saved'));
    expect(localStorage.getItem('studio.editor.draft.w1')).toBeNull();
    // the server answered no problems
    expect(within(screen.getByRole('region', { name: /Problems/ })).getByText(/None/)).toBeTruthy();
  });

  it('undo brings back the previous draft (Ctrl+Z) and Delete removes the selection', async () => {
    open();
    const item = await screen.findByTestId('palette-input');
    await act(async () => {
      fireEvent.keyDown(item, { key: 'Enter' });
    });
    expect(await screen.findByTestId('node-input')).toBeTruthy();
    await act(async () => {
      fireEvent.keyDown(document.body, { key: 'Delete' });
    });
    expect(screen.queryByTestId('node-input')).toBeNull();
    await act(async () => {
      fireEvent.keyDown(document.body, { key: 'z', ctrlKey: true });
    });
    expect(screen.getByTestId('node-input')).toBeTruthy();
  });

  it('connects by keyboard from the inspector, offering only compatible outputs', async () => {
    open();
    const item = await screen.findByTestId('palette-input');
    await act(async () => {
      fireEvent.keyDown(item, { key: 'Enter' });
    });
    await screen.findByTestId('node-input');
    fireEvent.click(within(screen.getByRole('region', { name: /Problems/ })).getByRole('button', { name: /tts\.text/ }));
    const select = (await screen.findByLabelText('Connect text from')) as HTMLSelectElement;
    expect([...select.options].map((o) => o.textContent)).toEqual(['or connect from…', 'input.value (TEXT)']);
    // speed (INT) cannot take TEXT: nothing to offer
    expect(screen.queryByLabelText('Connect speed from')).toBeNull();
    await act(async () => {
      fireEvent.change(select, { target: { value: select.options[1]!.value } });
    });
    expect(await screen.findByText('input.value')).toBeTruthy();
    await waitFor(() => expect(api.update).toHaveBeenCalled(), { timeout: 3000 });
    const sent = api.update.mock.calls.at(-1)![0] as { definition: Workflow };
    expect(sent.definition.nodes[0]!.inputs).toEqual({ speed: 100, text: '${input.value}' });
  });

  it('reopens unsaved work from the browser when the server never got it', async () => {
    const mine: Workflow = { version: 2, nodes: [{ id: 'kept', uses: 'output', inputs: { value: 1 } }] };
    localStorage.setItem('studio.editor.draft.w1', JSON.stringify({ definition: mine, layout: { nodes: { kept: { x: 0, y: 0 } } }, at: Date.parse('2026-02-01T00:00:00Z') }));
    open();
    expect(await screen.findByTestId('node-kept')).toBeTruthy();
    await waitFor(() => expect(api.update).toHaveBeenCalled(), { timeout: 3000 });
    expect((api.update.mock.calls[0]![0] as { definition: Workflow }).definition).toEqual(mine);
  });

  it('shows the server’s words when the workflow cannot be opened', async () => {
    api.get.mockReset().mockRejectedValue(new Error('workflow not found'));
    open();
    expect(await screen.findByText('workflow not found')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Back to workflows' })).toBeTruthy();
  });
});
