import { describe, expect, it } from 'vitest';
import { safeNext } from './sign-in-page';

describe('safeNext', () => {
  it('keeps a path of this site', () => {
    expect(safeNext('/workflows/abc?x=1')).toBe('/workflows/abc?x=1');
  });

  it.each([null, '', 'https://evil.example/', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)'])('sends %s home instead of off-site', (next) => {
    expect(safeNext(next)).toBe('/');
  });
});
