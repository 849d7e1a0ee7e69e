import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { NodeSpec } from '../../../contract';
import { Palette } from './palette';

const spec = (id: string, example?: Record<string, unknown>): NodeSpec => ({
  id,
  kind: 'model',
  title: `Title of ${id}`,
  category: 'image',
  description: 'Makes images.',
  inputs: {},
  outputs: {},
  ...(example ? { example } : {}),
});

describe('the palette', () => {
  it('shows a node\'s example inputs under its description, and nothing for a node without one', () => {
    render(<Palette specs={[spec('with-example', { prompt: 'a fox', num_images: 2 }), spec('without')]} loading={false} error={null} workflowId="w" onAdd={() => undefined} />);
    const item = screen.getByTestId('palette-with-example');
    expect(item.textContent).toContain('e.g. prompt: "a fox", num_images: 2');
    expect(item.getAttribute('title')).toBe('with-example: Makes images.\nExample: prompt: "a fox", num_images: 2');
    expect(screen.getByTestId('palette-without').textContent).not.toContain('e.g.');
  });
});
