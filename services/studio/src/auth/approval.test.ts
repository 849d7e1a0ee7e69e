import { describe, expect, it } from 'vitest';
import type { Session } from '../lib/session';
import { expiresIn, normalizeUserCode, orgOptions, refusalHeading, scopeMeaning, spendsCredit } from './approval';

const session = (extra: Partial<Session> = {}): Session =>
  ({
    user: { id: 'u', email: 'a@example.test', name: 'A' },
    organization: { id: 'o1', slug: 'acme', name: 'Acme', role: 'owner', balanceUsd: 5 },
    organizations: [
      { id: 'o0', slug: 'zeta', name: 'Zeta', role: 'member' },
      { id: 'o1', slug: 'acme', name: 'Acme', role: 'owner' },
    ],
    expiresAt: '2030-01-01T00:00:00Z',
    ...extra,
  }) as Session;

describe('normalizeUserCode', () => {
  it.each([
    ['bcdfghjk', 'BCDF-GHJK'],
    [' bcdf-ghjk ', 'BCDF-GHJK'],
    ['BCDF GHJK', 'BCDF-GHJK'],
  ])('writes %s the way the CLI prints it', (typed, shown) => {
    expect(normalizeUserCode(typed)).toBe(shown);
  });
  it('leaves a code of another length for the server to judge', () => {
    expect(normalizeUserCode(' abc ')).toBe('ABC');
  });
});

describe('orgOptions', () => {
  it("offers every organization, the session's own selected", () => {
    expect(orgOptions(session())).toEqual({ options: [{ slug: 'zeta', name: 'Zeta' }, { slug: 'acme', name: 'Acme' }], selected: 'acme' });
  });
  it("offers the session's organization when the answer lists none (an older server)", () => {
    const old = session();
    delete (old as Partial<Session>).organizations;
    expect(orgOptions(old)).toEqual({ options: [{ slug: 'acme', name: 'Acme' }], selected: 'acme' });
  });
});

describe('what the pages say', () => {
  it('warns about spending only with run', () => {
    expect(spendsCredit(['read', 'run'])).toBe(true);
    expect(spendsCredit(['read'])).toBe(false);
    expect(scopeMeaning('run')).toContain("organization's credit");
    expect(scopeMeaning('other')).toBe('other');
  });
  it('names refusals by status', () => {
    expect(refusalHeading(410)).toBe('This code has expired');
    expect(refusalHeading(404)).toBe('Code not found');
    expect(refusalHeading(429)).toBe('Too many attempts');
    expect(refusalHeading(undefined)).toBe('Something went wrong');
  });
  it('counts down to expiry', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(expiresIn('2026-01-01T00:14:30Z', now)).toBe('in 14 minutes');
    expect(expiresIn('2026-01-01T00:01:10Z', now)).toBe('in 1 minute');
    expect(expiresIn('2026-01-01T00:00:20Z', now)).toBe('in under a minute');
    expect(expiresIn('2025-12-31T23:59:00Z', now)).toBe('expired');
  });
});
