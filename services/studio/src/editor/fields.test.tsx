import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import type { Connector } from '../../../contract';
import { ValueField } from './fields';

const c = (id: string, extra: Partial<Connector> = {}): Connector => ({ id: id as Connector['id'], isOptional: false, isArray: false, ...extra });

describe('ValueField', () => {
  it('an INT port is a number input with bounds and step 1, checked live with the engine’s words', () => {
    const onChange = vi.fn();
    const { rerender } = render(<ValueField label="speed" connector={c('INT', { minValue: 80, maxValue: 450, defaultValue: 175, isOptional: true })} value={undefined} present={false} onChange={onChange} />);
    const input = screen.getByLabelText('speed') as HTMLInputElement;
    expect(input.type).toBe('number');
    expect(input.min).toBe('80');
    expect(input.max).toBe('450');
    expect(input.step).toBe('1');
    expect(input.placeholder).toBe('175');
    fireEvent.change(input, { target: { value: '999' } });
    expect(onChange).toHaveBeenLastCalledWith(999);
    rerender(<ValueField label="speed" connector={c('INT', { minValue: 80, maxValue: 450 })} value={999} present onChange={onChange} />);
    expect(screen.getByText(/speed must be an INT between 80 and 450, got 999/)).toBeTruthy();
    expect(input.getAttribute('aria-invalid')).toBe('true');
  });

  it('option values are a dropdown whose empty choice means the default', () => {
    const onChange = vi.fn();
    render(<ValueField label="format" connector={c('TEXT', { optionValues: ['wav', 'mp3'], defaultValue: 'wav', isOptional: true })} value="mp3" present onChange={onChange} />);
    const select = screen.getByLabelText('format') as HTMLSelectElement;
    expect(select.tagName).toBe('SELECT');
    expect(select.selectedOptions[0]!.textContent).toBe('mp3');
    fireEvent.change(select, { target: { value: '' } });
    expect(onChange).toHaveBeenLastCalledWith(undefined);
    fireEvent.change(select, { target: { value: '0' } });
    expect(onChange).toHaveBeenLastCalledWith('wav');
  });

  it('BOOLEAN is a switch; long text names get a textarea', () => {
    const onChange = vi.fn();
    render(
      <>
        <ValueField label="loud" connector={c('BOOLEAN')} value={false} present onChange={onChange} />
        <ValueField label="prompt" connector={c('TEXT')} value="hi" present onChange={onChange} />
      </>,
    );
    const sw = screen.getByRole('switch');
    fireEvent.click(sw);
    expect(onChange).toHaveBeenLastCalledWith(true);
    expect(screen.getByLabelText('prompt').tagName).toBe('TEXTAREA');
  });

  it('STRUCTURED is a JSON editor that reports parse errors and commits parsed values', () => {
    const onChange = vi.fn();
    render(<ValueField label="data" connector={c('STRUCTURED')} value={{ a: 1 }} present onChange={onChange} />);
    const box = screen.getByLabelText('data') as HTMLTextAreaElement;
    expect(JSON.parse(box.value)).toEqual({ a: 1 });
    fireEvent.change(box, { target: { value: '{"a": ' } });
    expect(screen.getByText(/Not valid JSON yet/)).toBeTruthy();
    expect(onChange).not.toHaveBeenCalled();
    fireEvent.change(box, { target: { value: '[1, 2]' } });
    expect(onChange).toHaveBeenLastCalledWith([1, 2]);
  });

  it('a file port takes a URL or an upload, and shows the server’s problems', async () => {
    const onChange = vi.fn();
    const upload = vi.fn().mockResolvedValue({ kind: 'image', ref: 'https://x/a.png' });
    const { container } = render(<ValueField label="image" connector={c('IMAGE')} value={undefined} present={false} onChange={onChange} upload={upload} problems={['input "image" (IMAGE) is required']} />);
    fireEvent.change(screen.getByLabelText('image'), { target: { value: 'https://example.com/cat.png' } });
    expect(onChange).toHaveBeenLastCalledWith({ kind: 'image', ref: 'https://example.com/cat.png' });
    expect(screen.getByText('input "image" (IMAGE) is required')).toBeTruthy();
    const file = new File(['png'], 'a.png', { type: 'image/png' });
    fireEvent.change(container.querySelector('input[type=file]')!, { target: { files: [file] } });
    await vi.waitFor(() => expect(onChange).toHaveBeenLastCalledWith({ kind: 'image', ref: 'https://x/a.png' }));
    expect(upload).toHaveBeenCalledWith(file);
  });
});
