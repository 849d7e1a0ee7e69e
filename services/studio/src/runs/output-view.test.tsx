import { fireEvent, render, screen, within } from '@testing-library/react';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { downloadName, OutputsList, OutputView } from './output-view';

beforeAll(() => {
  let n = 0;
  URL.createObjectURL = vi.fn(() => `blob:test/${++n}`);
  URL.revokeObjectURL = vi.fn();
});

const REF = 'https://svc.example/blobs/runs/x/y.png?sig=1';

describe('OutputView', () => {
  it('shows an image ref as an image with a download link', () => {
    render(<OutputView name="picture" artifact={{ kind: 'image', ref: REF, mimeType: 'image/png', metadata: { width: 10, height: 5 } }} />);
    const img = screen.getByRole('img', { name: 'Output picture' });
    expect(img.getAttribute('src')).toBe(REF);
    const link = screen.getByRole('link', { name: 'Download picture' });
    expect(link.getAttribute('href')).toBe(REF);
    expect(link.getAttribute('download')).toBe('picture.png');
    expect(screen.getByText('width 10 · height 5')).toBeTruthy();
  });

  it('shows audio and video with controls', () => {
    const { container } = render(
      <>
        <OutputView name="voice" artifact={{ kind: 'audio', ref: 'https://x/a.wav', mimeType: 'audio/wav' }} />
        <OutputView name="clip" artifact={{ kind: 'video', ref: 'https://x/v.mp4' }} />
      </>,
    );
    const audio = container.querySelector('audio')!;
    expect(audio.hasAttribute('controls')).toBe(true);
    expect(audio.getAttribute('src')).toBe('https://x/a.wav');
    const video = container.querySelector('video')!;
    expect(video.hasAttribute('controls')).toBe(true);
    expect(screen.getByRole('link', { name: 'Download clip' }).getAttribute('download')).toBe('clip.mp4');
  });

  it('shows inline text preformatted, with copy and a .txt download from a Blob URL', async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.assign(navigator, { clipboard: { writeText } });
    const { container } = render(<OutputView name="story" artifact={{ kind: 'text', value: 'line one\nline two' }} />);
    expect(container.querySelector('pre')!.textContent).toBe('line one\nline two');
    const link = await screen.findByRole('link', { name: 'Download story' });
    expect(link.getAttribute('href')).toMatch(/^blob:test\//);
    expect(link.getAttribute('download')).toBe('story.txt');
    fireEvent.click(screen.getByRole('button', { name: 'Copy' }));
    expect(writeText).toHaveBeenCalledWith('line one\nline two');
  });

  it('shows structured values as a collapsible tree', () => {
    render(<OutputView name="info" artifact={{ kind: 'structured', value: { tags: ['a', 'b'], deep: { deeper: { n: 3 } } } }} />);
    const tree = screen.getByRole('tree', { name: 'Output info' });
    expect(within(tree).getByText('"a"')).toBeTruthy();
    // Two levels open by default; the third is folded until expanded.
    expect(within(tree).queryByText('3')).toBeNull();
    fireEvent.click(within(tree).getByRole('button', { name: 'Expand deeper' }));
    expect(within(tree).getByText('3')).toBeTruthy();
    fireEvent.click(within(tree).getByRole('button', { name: 'Collapse tags' }));
    expect(within(tree).queryByText('"a"')).toBeNull();
  });

  it('shows numbers and booleans plainly', () => {
    render(<OutputsList outputs={{ count: { kind: 'int', value: 42 }, ok: { kind: 'boolean', value: false } }} />);
    expect(screen.getByText('42')).toBeTruthy();
    expect(screen.getByText('false')).toBeTruthy();
    expect(screen.queryByRole('tree')).toBeNull();
  });

  it('says when there are no outputs', () => {
    render(<OutputsList outputs={{}} />);
    expect(screen.getByText('The run gave no outputs.')).toBeTruthy();
  });
});

describe('downloadName', () => {
  it.each([
    [{ kind: 'image', ref: 'x', mimeType: 'image/jpeg' }, 'a b.jpg'],
    [{ kind: 'audio', ref: 'x', mimeType: 'audio/mpeg' }, 'a b.mp3'],
    [{ kind: 'file', ref: 'x' }, 'a b.bin'],
    [{ kind: 'structured', value: {} }, 'a b.json'],
    [{ kind: 'float', value: 1.5 }, 'a b.json'],
  ] as const)('%o', (artifact, expected) => {
    expect(downloadName('a b', artifact).replace('_', ' ')).toBe(expected);
  });
});
