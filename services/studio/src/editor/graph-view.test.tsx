import { render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import './flow-test-setup';
import type { Workflow } from '../../../contract';

vi.mock('../lib/api', () => ({
  client: {
    ops: {
      'nodes.list': vi.fn().mockResolvedValue([
        {
          id: 'speech-espeak', kind: 'model', title: 'Text to speech', category: 'audio', description: 'Speaks text',
          inputs: { text: { name: 'text', connector: { id: 'TEXT', isOptional: false, isArray: false } } },
          outputs: { audio: { name: 'audio', connector: { id: 'AUDIO', isOptional: false, isArray: false } } },
        },
      ]),
      'workflows.get': vi.fn().mockRejectedValue(new Error('not here')),
    },
    routes: {},
  },
  errorText: (e: unknown) => String(e),
}));

const { GraphView } = await import('./graph-view');

const definition: Workflow = {
  version: 2,
  nodes: [
    { id: 'text', uses: 'input', outputType: 'TEXT', inputs: { default: 'hello' } },
    { id: 'tts', uses: 'speech-espeak', inputs: { text: '${text.value}' } },
    { id: 'out', uses: 'output', inputs: { value: '${tts.audio}' } },
  ],
};

describe('GraphView', () => {
  it('draws every node with typed handles, read-only, coloured by steps and changes', async () => {
    render(
      <GraphView
        definition={definition}
        layout={null}
        steps={{ tts: { status: 'failed', error: { code: 'node_failed', message: 'espeak crashed' } } }}
        changes={{ out: 'added' }}
      />,
    );
    await waitFor(() => expect(screen.getByTestId('node-tts').textContent).toContain('Text to speech'));
    expect(screen.getByTestId('node-text').textContent).toContain('default = "hello"');
    expect(screen.getByTestId('handle-tts-in-text').className).toContain('c-text');
    expect(screen.getByTestId('handle-tts-out-audio').className).toContain('c-audio');
    expect(screen.getByTestId('handle-out-in-value')).toBeTruthy();
    expect(screen.getByTestId('node-tts').className).toContain('step-failed');
    expect(screen.getByText('espeak crashed').getAttribute('role')).toBe('alert');
    expect(screen.getByTestId('node-out').className).toContain('change-added');
    expect(screen.getByRole('figure', { name: 'Workflow graph with 3 nodes' })).toBeTruthy();
  });
});
