import { bumpSemver, checkOrgSlug, compareSemver, parseSelector, parseSemver, parseWorkflowRef } from '../../services/engine';

describe('semver and selectors', () => {
  it('accepts MAJOR.MINOR.PATCH only', () => {
    expect(parseSemver('2.1.0')).toEqual({ ok: true, value: { major: 2, minor: 1, patch: 0 } });
    for (const bad of ['2.1', '2.1.0-beta', '2.1.0+build', '02.1.0', 'v2.1.0', '', '1.2.3.4']) {
      expect(parseSemver(bad).ok).toBe(false);
    }
  });

  it('resolves latest, exact and bare-major selectors and rejects 2.5 as ambiguous', () => {
    expect(parseSelector('latest')).toEqual({ ok: true, value: { kind: 'latest' } });
    expect(parseSelector('2')).toEqual({ ok: true, value: { kind: 'major', major: 2 } });
    expect(parseSelector('2.1.0')).toEqual({ ok: true, value: { kind: 'exact', version: { major: 2, minor: 1, patch: 0 } } });
    const partial = parseSelector('2.5');
    expect(partial.ok).toBe(false);
    expect(!partial.ok && partial.message).toContain('ambiguous');
    expect(parseSelector('newest').ok).toBe(false);
    expect(parseSelector('LATEST').ok).toBe(false);
  });

  it('orders versions and bumps from the highest ever published', () => {
    expect(compareSemver({ major: 1, minor: 10, patch: 0 }, { major: 1, minor: 9, patch: 9 })).toBeGreaterThan(0);
    expect(bumpSemver(null, 'patch')).toEqual({ major: 1, minor: 0, patch: 0 });
    expect(bumpSemver({ major: 1, minor: 2, patch: 3 }, 'major')).toEqual({ major: 2, minor: 0, patch: 0 });
    expect(bumpSemver({ major: 1, minor: 2, patch: 3 }, 'minor')).toEqual({ major: 1, minor: 3, patch: 0 });
    expect(bumpSemver({ major: 1, minor: 2, patch: 3 }, 'patch')).toEqual({ major: 1, minor: 2, patch: 4 });
  });
});

describe('workflow references', () => {
  it('parses addresses and UUIDs with and without a selector', () => {
    expect(parseWorkflowRef('acme/flow')).toEqual({ ok: true, value: { id: { kind: 'address', org: 'acme', slug: 'flow' }, selector: { kind: 'latest' }, explicitSelector: false } });
    expect(parseWorkflowRef('acme/my-flow-2@1.2.0')).toMatchObject({ ok: true, value: { selector: { kind: 'exact' }, explicitSelector: true } });
    expect(parseWorkflowRef('acme/flow@latest')).toMatchObject({ ok: true, value: { selector: { kind: 'latest' }, explicitSelector: true } });
    expect(parseWorkflowRef('7F0C2A4E-2B7A-4A53-9A52-0D1D8F7A1C11@3')).toMatchObject({
      ok: true,
      value: { id: { kind: 'uuid', id: '7f0c2a4e-2b7a-4a53-9a52-0d1d8f7a1c11' }, selector: { kind: 'major', major: 3 } },
    });
  });

  it.each([
    ['acme', 'must be an address'],
    ['acme/flow/extra', 'must be an address'],
    ['Acme/flow', 'kebab-case'],
    ['acme/flow_1', 'kebab-case'],
    ['acme/-flow', 'kebab-case'],
    ['acme/flow@2.5', 'ambiguous'],
    ['acme/flow@', 'not valid'],
    ['acme/flow@1.0.0-rc1', 'not valid'],
  ])('rejects %s', (text, expected) => {
    const parsed = parseWorkflowRef(text);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.message).toContain(expected);
  });

  it('refuses platform namespaces as organization slugs', () => {
    expect(checkOrgSlug('core')).toMatchObject({ ok: false, message: expect.stringContaining('reserved') });
    expect(checkOrgSlug('acme')).toEqual({ ok: true, value: 'acme' });
  });
});
